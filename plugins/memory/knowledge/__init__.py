"""What a public agent knows: its KNOWLEDGE.md assembled from the public knowledge its keywords match
(docs/agents.md#knowledge). ``gather`` finds the documents, ``assemble`` writes them as Markdown,
``rebuild`` puts the result in the agent's file and says when."""
