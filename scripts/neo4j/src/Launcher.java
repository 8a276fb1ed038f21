import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.Result;
import org.neo4j.graphdb.Transaction;
import org.neo4j.harness.Neo4j;
import org.neo4j.harness.Neo4jBuilders;

/**
 * A real Neo4j (the community database of Neo4j's own test harness) serving Bolt on 127.0.0.1
 * on a free port, for the tests and benches. Prints "neo4j-ready uri=bolt://... version=..."
 * once the database answers a query, then runs until SIGTERM (the shutdown hook stops the
 * database cleanly). Authentication is off: it listens on loopback only and holds test data.
 *
 * Usage: java -cp 'lib/*:classes' Launcher DATA_DIR [PORT] [PAGECACHE]
 */
public final class Launcher {
    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: Launcher DATA_DIR [PORT] [PAGECACHE]");
            System.exit(2);
        }
        Path data = Path.of(args[0]);
        int port = args.length > 1 ? Integer.parseInt(args[1]) : 0;
        if (port == 0) {  // a concrete port: the routing table (neo4j:// URIs) advertises it
            try (java.net.ServerSocket probe = new java.net.ServerSocket(0, 1,
                    java.net.InetAddress.getByName("127.0.0.1"))) {
                port = probe.getLocalPort();
            }
        }
        String pageCache = args.length > 2 ? args[2] : "512m";
        Files.createDirectories(data);
        Neo4j neo4j = Neo4jBuilders.newInProcessBuilder(data)
                .withDisabledServer()
                .withConfig(BoltConnector.enabled, true)
                .withConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port))
                .withConfig(BoltConnector.advertised_address, new SocketAddress("127.0.0.1", port))
                .withConfig(GraphDatabaseSettings.pagecache_memory,
                        org.neo4j.io.ByteUnit.parse(pageCache))
                .withConfig(GraphDatabaseSettings.transaction_timeout, Duration.ofMinutes(10))
                .build();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                neo4j.close();
            } finally {
                System.out.println("neo4j-stopped");
                System.out.flush();
                stopped.countDown();
            }
        }));
        GraphDatabaseService db = neo4j.defaultDatabaseService();
        String version;
        try (Transaction tx = db.beginTx();
             Result r = tx.execute("CALL dbms.components() YIELD versions RETURN versions[0] AS v")) {
            version = String.valueOf(r.next().get("v"));
            tx.commit();
        }
        URI bolt = neo4j.boltURI();
        System.out.println("neo4j-ready uri=" + bolt + " version=" + version);
        System.out.flush();
        stopped.await();
    }
}
