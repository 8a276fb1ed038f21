// Neo4j schema (docs/graph.md#stores): plugins/graph/neo4j_store/schema.py creates, by name, what the database lacks.
// {{dimensions}} is replaced by the configured embedding dimensions before execution;
// statements are separated by ';' at the end of a line. Every statement here is linted by
// tests/plugins/graph/test_cypher_lint.py with Neo4j's own Cypher analyser.

// Every node the store writes carries the GraphNode label: the (accountId, id) uniqueness
// constraint (ids are per account) and the account index hang off it (it is stripped from the
// labels the port returns).
CREATE CONSTRAINT graph_node_account_id IF NOT EXISTS FOR (n:GraphNode) REQUIRE (n.accountId, n.id) IS UNIQUE;
CREATE INDEX graph_node_account IF NOT EXISTS FOR (n:GraphNode) ON (n.accountId, n.deletedAt);
CREATE INDEX graph_node_keywords IF NOT EXISTS FOR (n:GraphNode) ON (n.keywordsLower);
// The entity path's lookup (find where entityKey = $v): only Entity nodes carry the property.
CREATE INDEX graph_node_entity_key IF NOT EXISTS FOR (n:GraphNode) ON (n.entityKey);
// The keyed lookups of per-visitor memory (a visitor's Messages, their slices) and time on tasks
// (a Task's timers and adjustments): find where visitorKey / sliceToken / taskId = $v.
CREATE INDEX graph_node_visitor_key IF NOT EXISTS FOR (n:GraphNode) ON (n.visitorKey);
CREATE INDEX graph_node_slice_token IF NOT EXISTS FOR (n:GraphNode) ON (n.sliceToken);
CREATE INDEX graph_node_task_id IF NOT EXISTS FOR (n:GraphNode) ON (n.taskId);
// A conversation's Messages (find where conversationId = $v): the webchat re-reads them on every poll.
CREATE INDEX graph_node_conversation_id IF NOT EXISTS FOR (n:GraphNode) ON (n.conversationId);

// One HNSW cosine vector index per vector-indexed label (docs/graph.md#labels; pinned by the schema-labels gate).
CREATE VECTOR INDEX question_embedding IF NOT EXISTS FOR (n:Question) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: {{dimensions}}, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX defined_term_embedding IF NOT EXISTS FOR (n:DefinedTerm) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: {{dimensions}}, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX review_embedding IF NOT EXISTS FOR (n:Review) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: {{dimensions}}, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX service_embedding IF NOT EXISTS FOR (n:Service) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: {{dimensions}}, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX person_embedding IF NOT EXISTS FOR (n:Person) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: {{dimensions}}, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX local_business_embedding IF NOT EXISTS FOR (n:LocalBusiness) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: {{dimensions}}, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX price_specification_embedding IF NOT EXISTS FOR (n:PriceSpecification) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: {{dimensions}}, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX task_embedding IF NOT EXISTS FOR (n:Task) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: {{dimensions}}, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX creative_work_embedding IF NOT EXISTS FOR (n:CreativeWork) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: {{dimensions}}, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX digital_document_embedding IF NOT EXISTS FOR (n:DigitalDocument) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: {{dimensions}}, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX knowledge_document_embedding IF NOT EXISTS FOR (n:KnowledgeDocument) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: {{dimensions}}, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX section_embedding IF NOT EXISTS FOR (n:Section) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: {{dimensions}}, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX chunk_embedding IF NOT EXISTS FOR (n:Chunk) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: {{dimensions}}, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX conversation_embedding IF NOT EXISTS FOR (n:Conversation) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: {{dimensions}}, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX message_embedding IF NOT EXISTS FOR (n:Message) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: {{dimensions}}, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX event_embedding IF NOT EXISTS FOR (n:Event) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: {{dimensions}}, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX workflow_embedding IF NOT EXISTS FOR (n:Workflow) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: {{dimensions}}, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX preference_embedding IF NOT EXISTS FOR (n:Preference) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: {{dimensions}}, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX report_embedding IF NOT EXISTS FOR (n:Report) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: {{dimensions}}, `vector.similarity_function`: 'cosine'}};

// BM25 over one property, ftsText: the canonical text-property union as the embedded store's
// stemmed index analyses it (plugins/graph/analysis.py: FTS5's porter unicode61 tokenizer, every
// property weighted alike, stop words kept), written by the store on every node, so the whitespace
// analyzer here sees the embedded store's very terms and the two rank alike. On every label: the
// store gives each node the base label GraphNode. An index of another property list or analyzer
// is dropped and rebuilt by the first writer that starts, after it backfills ftsText on the nodes
// that lack it (plugins/graph/neo4j_store/schema.py).
CREATE FULLTEXT INDEX entity_search IF NOT EXISTS FOR (n:GraphNode)
ON EACH [n.ftsText]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'whitespace'}};

// Leases of the serve processes sharing this database (plugins/graph/neo4j_store/leases.py): one
// node per name, taken by MERGE, so the name is unique. No GraphNode label: no account reads them.
CREATE CONSTRAINT lease_name IF NOT EXISTS FOR (l:Lease) REQUIRE l.name IS UNIQUE;
