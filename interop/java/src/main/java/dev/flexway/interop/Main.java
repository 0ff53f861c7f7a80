package dev.flexway.interop;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Java client of flexway's interoperability suite: what a user's
 * application does with kafka-clients, through the gateway, over
 * SASL_PLAINTEXT with PLAIN (an API key).
 *
 * <pre>
 * Main produce       --bootstrap B --user U --password P [--topic orders] [--count N] [--prefix V] [--pause-ms MS] [--value-bytes N]
 * Main consume-group --bootstrap B --user U --password P [--topic orders] [--count N] [--group billing]
 * Main txn           --bootstrap B --user U --password P [--topic orders] [--count N] [--txn-id ID] [--prefix V]
 * Main admin-list    --bootstrap B --user U --password P
 * </pre>
 *
 * Results go to stdout, one line each (see each command); the clients' logs
 * go to stderr. Exit codes: 0 done, 1 failed, 2 usage, 3 the gateway does not
 * announce an API the command needs (stderr: "UNSUPPORTED_API: ..."), 4 the
 * command did not finish within --timeout-ms.
 *
 * By default the clients' timeouts are the suite's, shorter than the
 * library's so that a failing test fails fast (request.timeout.ms 15 s,
 * the API and delivery timeouts from --timeout-ms). --library-defaults true
 * leaves every timeout, backoff and linger at kafka-clients' defaults
 * (request.timeout.ms 30 s, delivery.timeout.ms 120 s, max.block.ms 60 s,
 * reconnect.backoff.max.ms 1 s, linger.ms 5): the client a user runs
 * unconfigured; --timeout-ms then bounds the command only.
 */
public final class Main {
    static final int EXIT_FAILED = 1;
    static final int EXIT_USAGE = 2;
    static final int EXIT_UNSUPPORTED = 3;
    static final int EXIT_TIMEOUT = 4;

    private Main() {}

    public static void main(String[] args) {
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
        System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
        System.setProperty("org.slf4j.simpleLogger.showDateTime", "true");

        Opts o;
        try {
            o = Opts.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("usage: " + e.getMessage());
            System.err.println("  produce | consume-group | txn | admin-list"
                + " --bootstrap HOST:PORT --user U --password P [--topic T] [--count N]"
                + " [--group G] [--txn-id ID] [--prefix V] [--timeout-ms MS] [--pause-ms MS] [--value-bytes N]"
                + " [--library-defaults true]");
            System.exit(EXIT_USAGE);
            return;
        }
        watchdog(o.timeoutMs + 15_000);
        try {
            switch (o.command) {
                case "produce" -> produce(o);
                case "consume-group" -> consumeGroup(o);
                case "txn" -> txn(o);
                case "admin-list" -> adminList(o);
                default -> throw new IllegalStateException("unreachable");
            }
        } catch (Throwable e) {
            System.out.flush();
            UnsupportedVersionException u = unsupported(e);
            if (u != null) {
                System.err.println("UNSUPPORTED_API: " + u.getMessage());
                System.err.flush();
                System.exit(EXIT_UNSUPPORTED);
            }
            e.printStackTrace();
            System.err.println("FAILED: " + e);
            System.err.flush();
            System.exit(EXIT_FAILED);
        }
        System.out.flush();
        System.exit(0);
    }

    /** The UnsupportedVersionException in e's causes: the gateway does not announce an API (or version) the client needs. */
    static UnsupportedVersionException unsupported(Throwable e) {
        for (int depth = 0; e != null && depth < 16; e = e.getCause(), depth++) {
            if (e instanceof UnsupportedVersionException u) {
                return u;
            }
        }
        return null;
    }

    /** Ends the process if a command hangs, so the caller gets the output so far and a distinct code. */
    static void watchdog(long ms) {
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(ms);
            } catch (InterruptedException e) {
                return;
            }
            System.out.flush();
            System.err.println("TIMEOUT: not done after " + ms + " ms");
            System.err.flush();
            Runtime.getRuntime().halt(EXIT_TIMEOUT);
        }, "watchdog");
        t.setDaemon(true);
        t.start();
    }

    /** The connection settings every client shares: SASL PLAIN over plaintext, as key id / key. */
    static Properties common(Opts o) {
        Properties p = new Properties();
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, o.bootstrap);
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_PLAINTEXT");
        p.put(SaslConfigs.SASL_MECHANISM, "PLAIN");
        p.put(SaslConfigs.SASL_JAAS_CONFIG, "org.apache.kafka.common.security.plain.PlainLoginModule required"
            + " username=\"" + jaasEscape(o.user) + "\" password=\"" + jaasEscape(o.password) + "\";");
        p.put(CommonClientConfigs.CLIENT_ID_CONFIG, "flexway-interop-" + o.command);
        if (o.libraryDefaults) {
            return p;
        }
        p.put(CommonClientConfigs.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        p.put(CommonClientConfigs.DEFAULT_API_TIMEOUT_MS_CONFIG, String.valueOf(o.timeoutMs));
        p.put(CommonClientConfigs.RECONNECT_BACKOFF_MAX_MS_CONFIG, "1000");
        return p;
    }

    static String jaasEscape(String s) {
        return s.replace("\\", "\\\\").replace("\"", "\\\"");
    }

    static String key(int i) {
        return "k" + (i % 4);
    }

    /**
     * produce: an idempotent producer (acks=all, 5 requests in flight) sends
     * --count records, key k(i%4), value PREFIX-i, asynchronously, --pause-ms
     * apart on average (record i due i+1 pauses after the loop's start, a
     * late wake-up made up; 0: at once); with --value-bytes, the value is
     * padded to that many bytes with '.' between PREFIX and "-i".
     * stdout: "sent PARTITION OFFSET KEY VALUE" per record in send order, then "produced N".
     */
    static void produce(Opts o) throws Exception {
        Properties p = common(o);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
        if (!o.libraryDefaults) {
            p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
            p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, String.valueOf(Math.max(o.timeoutMs, 20_000)));
            p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(o.timeoutMs));
        }
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(p)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            long start = System.currentTimeMillis();
            for (int i = 0; i < o.count; i++) {
                String tail = "-" + i;
                String pad = ".".repeat(Math.max(0, o.valueBytes - o.prefix.length() - tail.length()));
                sent.add(prod.send(new ProducerRecord<>(o.topic, key(i), o.prefix + pad + tail)));
                long wait = start + (i + 1) * o.pauseMs - System.currentTimeMillis();
                if (wait > 0) {
                    Thread.sleep(wait);
                }
            }
            prod.flush();
            for (int i = 0; i < o.count; i++) {
                RecordMetadata md = sent.get(i).get(o.timeoutMs, TimeUnit.MILLISECONDS);
                System.out.println("sent " + md.partition() + " " + md.offset() + " " + key(i) + " " + o.prefix + "-" + i);
            }
        }
        System.out.println("produced " + o.count);
    }

    /**
     * consume-group: a consumer in group --group subscribes to --topic, reads
     * --count records (from the committed offsets, else the earliest), and
     * commits exactly what it read.
     * stdout: "rec TOPIC PARTITION OFFSET KEY VALUE" per record, then
     * "committed PARTITION OFFSET" per partition, then "consumed N".
     */
    static void consumeGroup(Opts o) {
        Properties p = common(o);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, o.group);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        long deadline = System.currentTimeMillis() + o.timeoutMs;
        int got = 0;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            c.subscribe(List.of(o.topic));
            Map<TopicPartition, OffsetAndMetadata> next = new LinkedHashMap<>();
            while (got < o.count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    if (got >= o.count) {
                        break; // read, not processed: not committed, the next member reads it
                    }
                    System.out.println("rec " + r.topic() + " " + r.partition() + " " + r.offset() + " " + r.key() + " " + r.value());
                    next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    got++;
                }
            }
            if (!next.isEmpty()) {
                c.commitSync(next, Duration.ofMillis(o.timeoutMs));
                Map<Integer, Long> sorted = new TreeMap<>();
                next.forEach((tp, om) -> sorted.put(tp.partition(), om.offset()));
                sorted.forEach((part, off) -> System.out.println("committed " + part + " " + off));
            }
        }
        System.out.println("consumed " + got);
        if (got < o.count) {
            throw new IllegalStateException("consumed " + got + " of " + o.count + " records within " + o.timeoutMs + " ms");
        }
    }

    /**
     * txn: a transactional producer (--txn-id) commits one transaction of
     * --count records (PREFIX-committed-i) and aborts another (PREFIX-aborted-i);
     * then a read_committed consumer (assigned, no group) reads --topic from
     * the start up to the last stable offset.
     * stdout: "committed N", "aborted N", then "rec TOPIC PARTITION OFFSET KEY VALUE"
     * per record read, then "read N".
     */
    static void txn(Opts o) {
        Properties p = common(o);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, o.txnId);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "30000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, String.valueOf(Math.max(o.timeoutMs, 20_000)));
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(o.timeoutMs));
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(p)) {
            prod.initTransactions();
            prod.beginTransaction();
            for (int i = 0; i < o.count; i++) {
                prod.send(new ProducerRecord<>(o.topic, key(i), o.prefix + "-committed-" + i));
            }
            prod.commitTransaction();
            System.out.println("committed " + o.count);
            prod.beginTransaction();
            for (int i = 0; i < o.count; i++) {
                prod.send(new ProducerRecord<>(o.topic, key(i), o.prefix + "-aborted-" + i));
            }
            prod.flush(); // the aborted records are on the broker, then the abort marker
            prod.abortTransaction();
            System.out.println("aborted " + o.count);
        }

        Properties cp = common(o);
        cp.put(CommonClientConfigs.CLIENT_ID_CONFIG, "flexway-interop-txn-reader");
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        long deadline = System.currentTimeMillis() + o.timeoutMs;
        int read = 0;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo pi : c.partitionsFor(o.topic, Duration.ofMillis(o.timeoutMs))) {
                tps.add(new TopicPartition(pi.topic(), pi.partition()));
            }
            tps.sort(Comparator.comparingInt(TopicPartition::partition));
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps); // the last stable offsets under read_committed
            while (System.currentTimeMillis() < deadline && behind(c, end)) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    System.out.println("rec " + r.topic() + " " + r.partition() + " " + r.offset() + " " + r.key() + " " + r.value());
                    read++;
                }
            }
            if (behind(c, end)) {
                throw new IllegalStateException("read_committed consumer did not reach the end offsets " + end + " within " + o.timeoutMs + " ms");
            }
        }
        System.out.println("read " + read);
    }

    static boolean behind(KafkaConsumer<String, String> c, Map<TopicPartition, Long> end) {
        for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
            if (c.position(e.getKey()) < e.getValue()) {
                return true;
            }
        }
        return false;
    }

    /** admin-list: AdminClient.listTopics (internal topics included): the names, sorted, one per line. */
    static void adminList(Opts o) throws Exception {
        Properties p = common(o);
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "flexway-interop-admin");
        try (Admin a = Admin.create(p)) {
            Set<String> names = a.listTopics(new ListTopicsOptions().listInternal(true).timeoutMs((int) o.timeoutMs))
                .names().get(o.timeoutMs, TimeUnit.MILLISECONDS);
            for (String n : new TreeSet<>(names)) {
                System.out.println(n);
            }
        }
    }

    /** The command line. */
    static final class Opts {
        String command;
        String bootstrap;
        String user;
        String password;
        String topic = "orders";
        int count = 10;
        String group = "billing";
        String txnId = "interop-txn";
        String prefix = "java";
        long timeoutMs = 30_000;
        long pauseMs = 0;
        int valueBytes = 0;
        boolean libraryDefaults;

        static Opts parse(String[] args) {
            if (args.length == 0) {
                throw new IllegalArgumentException("a command is required");
            }
            Opts o = new Opts();
            o.command = args[0];
            if (!List.of("produce", "consume-group", "txn", "admin-list").contains(o.command)) {
                throw new IllegalArgumentException("unknown command " + o.command);
            }
            Map<String, String> kv = new HashMap<>();
            for (int i = 1; i < args.length; i += 2) {
                if (!args[i].startsWith("--") || i + 1 >= args.length) {
                    throw new IllegalArgumentException("expected --name value at " + args[i]);
                }
                kv.put(args[i].substring(2), args[i + 1]);
            }
            o.bootstrap = req(kv, "bootstrap");
            o.user = req(kv, "user");
            o.password = req(kv, "password");
            o.topic = kv.getOrDefault("topic", o.topic);
            o.group = kv.getOrDefault("group", o.group);
            o.txnId = kv.getOrDefault("txn-id", o.txnId);
            o.prefix = kv.getOrDefault("prefix", o.prefix);
            try {
                o.count = Integer.parseInt(kv.getOrDefault("count", String.valueOf(o.count)));
                o.timeoutMs = Long.parseLong(kv.getOrDefault("timeout-ms", String.valueOf(o.timeoutMs)));
                o.pauseMs = Long.parseLong(kv.getOrDefault("pause-ms", "0"));
                o.valueBytes = Integer.parseInt(kv.getOrDefault("value-bytes", "0"));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("--count, --timeout-ms, --pause-ms and --value-bytes are numbers: " + e.getMessage());
            }
            String lib = kv.getOrDefault("library-defaults", "false");
            if (!List.of("true", "false").contains(lib)) {
                throw new IllegalArgumentException("--library-defaults is true or false");
            }
            o.libraryDefaults = lib.equals("true");
            for (String k : kv.keySet()) {
                if (!List.of("bootstrap", "user", "password", "topic", "count", "group", "txn-id", "prefix", "timeout-ms", "pause-ms",
                    "value-bytes", "library-defaults").contains(k)) {
                    throw new IllegalArgumentException("unknown option --" + k);
                }
            }
            return o;
        }

        static String req(Map<String, String> kv, String k) {
            String v = kv.get(k);
            if (v == null || v.isEmpty()) {
                throw new IllegalArgumentException("--" + k + " is required");
            }
            return v;
        }
    }
}
