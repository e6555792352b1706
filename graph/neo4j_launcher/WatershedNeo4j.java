import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.neo4j.cli.ExecutionContext;
import org.neo4j.commandline.admin.security.SetInitialPasswordCommand;
import org.neo4j.configuration.GraphDatabaseInternalSettings;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.QueryExecutionException;
import org.neo4j.io.ByteUnit;
import picocli.CommandLine;

/**
 * The embedded Neo4j of `watershed services up` (graph/neo4j_server.py starts it; docs/graph.md).
 *
 * <p>Arguments: --home DIR --host HOST --port PORT --password-file FILE --pagecache SIZE. The
 * password is read from the file, never from the command line, which every user of the machine can
 * read. Prints one line "watershed-neo4j ready on bolt://HOST:PORT" once Bolt accepts connections;
 * SIGTERM shuts the database down cleanly (a checkpoint: the next start needs no recovery).
 */
public final class WatershedNeo4j {
    /** A salt and the SHA-256 of salt and password, of the password the neo4j user was last given. */
    private static final String AUTH_MARKER = "auth-digest";

    private WatershedNeo4j() {}

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable e) {
            // exit, whatever threads the database started before it failed
            e.printStackTrace();
            System.exit(1);
        }
    }

    private static void run(String[] args) throws Exception {
        Map<String, String> options = parse(args);
        Path home = Path.of(required(options, "--home")).toAbsolutePath();
        String host = required(options, "--host");
        int port = Integer.parseInt(required(options, "--port"));
        Path passwordFile = Path.of(required(options, "--password-file"));
        long pagecache = ByteUnit.parse(required(options, "--pagecache"));
        String password = Files.readString(passwordFile, StandardCharsets.UTF_8).strip();
        if (password.isEmpty()) {
            fail("the password file " + passwordFile + " is empty");
        }

        // A new database's neo4j user would have the password "neo4j" until changed; neo4j-admin's own
        // set-initial-password writes ours before the system database is created, so no Bolt
        // client ever sees the default.
        boolean fresh = !Files.exists(home.resolve("data").resolve("databases").resolve("system"));
        if (fresh) {
            int code = new CommandLine(new SetInitialPasswordCommand(new ExecutionContext(home, home.resolve("conf"))))
                    // "--": a password that begins with "-" is the parameter, not an option
                    .execute("--", password);
            if (code != 0) {
                fail("could not set the initial password (exit code " + code + ")");
            }
        }

        DatabaseManagementService service = builder(home, pagecache)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress(host, port))
                .setConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
                // Netty waits 5 s for quiet before closing each of its loops: 10 s of every stop
                .setConfig(GraphDatabaseInternalSettings.netty_server_shutdown_quiet_period, 0)
                .build();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            service.shutdown();
            stopped.countDown();
        }, "watershed-neo4j-shutdown"));
        // The settings may name a new password since the last start: the server follows them. The
        // marker keeps a salted digest of the password last set, so an unchanged one costs no query.
        Path marker = home.resolve(AUTH_MARKER);
        if (fresh || !matches(marker, password)) {
            if (!fresh) {
                setPassword(service, password);
            }
            remember(marker, password);
        }
        waitForBolt(host, port);
        System.out.println("watershed-neo4j ready on bolt://" + host + ":" + port);
        System.out.flush();
        stopped.await();
    }

    private static DatabaseManagementServiceBuilder builder(Path home, long pagecache) {
        return new DatabaseManagementServiceBuilder(home)
                .setConfig(GraphDatabaseSettings.logs_directory, home.resolve("logs"))
                .setConfig(GraphDatabaseSettings.pagecache_memory, pagecache)
                .setConfig(GraphDatabaseSettings.auth_enabled, true)
                // no usage reports: the product never talks to anything but its clients
                .setConfig(GraphDatabaseSettings.udc_enabled, false)
                .setConfig(GraphDatabaseInternalSettings.udc_network_enabled, false)
                // transaction logs grow as written, not 256 MB at a time
                .setConfig(GraphDatabaseSettings.preallocate_logical_logs, false);
    }

    private static void setPassword(DatabaseManagementService service, String password) {
        try {
            service.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME)
                    .executeTransactionally(
                            "ALTER USER neo4j SET PASSWORD $password CHANGE NOT REQUIRED",
                            Map.of("password", password));
        } catch (QueryExecutionException e) {
            // Neo4j refuses to "change" a password to the one it already has: nothing to do
            if (!e.getMessage().contains("Old password and new password cannot be the same")) {
                throw e;
            }
        }
    }

    private static boolean matches(Path marker, String password) throws IOException {
        if (!Files.exists(marker)) {
            return false;
        }
        String[] parts = Files.readString(marker, StandardCharsets.UTF_8).strip().split(" ");
        return parts.length == 2 && MessageDigest.isEqual(
                parts[1].getBytes(StandardCharsets.US_ASCII),
                digest(HexFormat.of().parseHex(parts[0]), password).getBytes(StandardCharsets.US_ASCII));
    }

    private static void remember(Path marker, String password) throws IOException {
        byte[] salt = new byte[16];
        new SecureRandom().nextBytes(salt);
        Path temporary = marker.resolveSibling(marker.getFileName() + ".tmp");
        Files.deleteIfExists(temporary);
        Files.createFile(temporary, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.writeString(temporary, HexFormat.of().formatHex(salt) + " " + digest(salt, password) + "\n",
                StandardCharsets.UTF_8);
        Files.move(temporary, marker, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    private static String digest(byte[] salt, String password) {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            sha.update(salt);
            return HexFormat.of().formatHex(sha.digest(password.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void waitForBolt(String host, int port) throws InterruptedException {
        for (int attempt = 0; attempt < 600; attempt++) {
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress(host, port), 1000);
                return;
            } catch (IOException notYet) {
                Thread.sleep(100);
            }
        }
        fail("Bolt did not open on " + host + ":" + port);
    }

    private static Map<String, String> parse(String[] args) {
        Map<String, String> options = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            options.put(args[i], args[i + 1]);
        }
        if (args.length % 2 != 0) {
            fail("expected --name value pairs, got a lone " + args[args.length - 1]);
        }
        return options;
    }

    private static String required(Map<String, String> options, String name) {
        String value = options.get(name);
        if (value == null) {
            fail("missing " + name);
        }
        return value;
    }

    private static void fail(String message) {
        System.err.println("watershed-neo4j: " + message);
        System.exit(2);
    }
}
