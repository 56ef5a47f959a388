// The reference event-store adapter in Java: JDK 17 and the PostgreSQL JDBC
// driver only (Debian: default-jdk-headless, libpostgresql-jdbc-java),
// speaking the onceproof driver protocol (version 1,
// docs/eventstore-driver.md) on stdin and stdout.
//
//   tck run --suite eventstore --target eventstore/process-java
//   tck run --suite eventstore --target 'eventstore/process=cmd:java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp /usr/share/java/postgresql.jar examples/eventstore-driver/java/Adapter.java'
//
// (serial GC and C1 only: a JVM with fewer threads of its own races two to
// three times faster on a loaded two-core machine)
//
// or compiled once with plain javac:
//
//   javac -d /tmp/adapter examples/eventstore-driver/java/Adapter.java
//   tck run ... --target 'eventstore/process=cmd:java -cp /tmp/adapter:/usr/share/java/postgresql.jar Adapter'
//
// The database is $TCK_POSTGRES_URL (postgres://user:password@host:port/db);
// the adapter creates and uses the schema onceproof_driver_java only.
// Requests are served on a pool of threads, each with its own connection,
// so many are in flight at once. The three conflicts come from the
// database's own named constraints inside one transaction, never from a
// check made before it:
//
//   - streams_aggregate_version (PRIMARY KEY): a taken version, or a second create;
//   - streams_aggregate_request (UNIQUE): a request id the aggregate already holds;
//   - the stream row is inserted only when its predecessor exists, in the
//     same statement, so no gap can be stored.
//
// Copy it and replace the Store class with your store: the protocol part
// (Adapter, Json) stays as it is.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

public class Adapter {
    static final int PROTOCOL = 1;

    public static void main(String[] args) throws Exception {
        String url = System.getenv("TCK_POSTGRES_URL");
        if (url == null || url.isEmpty()) {
            System.err.println("adapter: TCK_POSTGRES_URL is unset (postgres://user:password@host:port/db)");
            System.exit(2);
        }
        Store store = new Store(url);
        log("serving " + store.version());
        new Adapter(store).run();
    }

    static void log(String msg) {
        System.err.println("adapter[" + ProcessHandle.current().pid() + "]: " + msg);
        System.err.flush();
    }

    /** A definite answer other than ok: a protocol status and its fields. */
    static final class Refused extends Exception {
        private static final long serialVersionUID = 1L;
        final String status;
        final Map<String, Object> fields = new LinkedHashMap<>();

        Refused(String status, String message) {
            super(message);
            this.status = status;
        }

        Refused with(String k, Object v) {
            fields.put(k, v);
            return this;
        }
    }

    static Refused invalid(String message) {
        return new Refused("invalid-argument", message);
    }

    /** One stream as the protocol carries it. */
    static final class StreamIn {
        Map<String, Object> aggregate;
        String context, name, tenant, id, requestId, commandId;
        long version;
        List<String> types = new ArrayList<>();
        List<byte[]> bodies = new ArrayList<>();

        Refused duplicateRequest() {
            return new Refused("duplicate-request-id", "request id already stored")
                    .with("aggregate", aggregate).with("version", version).with("requestId", requestId);
        }

        Refused versionConflict() {
            return new Refused("version-conflict", "version " + version + " conflicts with the stored history")
                    .with("aggregate", aggregate).with("version", version).with("requestId", requestId);
        }

        Refused duplicateAggregate() {
            return new Refused("duplicate-aggregate-id", "the aggregate already exists")
                    .with("aggregate", aggregate).with("requestId", requestId);
        }
    }

    // ---- the store -------------------------------------------------------

    static final class Store {
        static final String SCHEMA = "onceproof_driver_java";
        static final String VERSION_KEY = "streams_aggregate_version";
        static final String REQUEST_KEY = "streams_aggregate_request";

        static final String DDL = ""
                + "CREATE SCHEMA IF NOT EXISTS " + SCHEMA + ";"
                + "CREATE TABLE IF NOT EXISTS " + SCHEMA + ".streams ("
                + " context text NOT NULL, name text NOT NULL, tenant text NOT NULL, id text NOT NULL,"
                + " version integer NOT NULL, request_id text NOT NULL, command_id text NOT NULL,"
                + " CONSTRAINT " + VERSION_KEY + " PRIMARY KEY (context, name, tenant, id, version),"
                + " CONSTRAINT " + REQUEST_KEY + " UNIQUE (context, name, tenant, id, request_id));"
                + "CREATE TABLE IF NOT EXISTS " + SCHEMA + ".events ("
                + " context text NOT NULL, name text NOT NULL, tenant text NOT NULL, id text NOT NULL,"
                + " version integer NOT NULL, seq integer NOT NULL, event_type text NOT NULL, body bytea NOT NULL,"
                + " CONSTRAINT events_stream_seq PRIMARY KEY (context, name, tenant, id, version, seq));";

        // The stream row (only at version 1 or right after an existing
        // predecessor) and, from what that insert returned, its events: one
        // statement, which PostgreSQL runs atomically, so the row locks a
        // racing writer waits on are held for one round trip only. Zero rows
        // means the stream row was not inserted: a gap.
        static final String APPEND = "WITH s AS ("
                + " INSERT INTO " + SCHEMA + ".streams (context, name, tenant, id, version, request_id, command_id)"
                + " SELECT ?::text, ?::text, ?::text, ?::text, ?::integer, ?::text, ?::text"
                + " WHERE ?::integer = 1 OR EXISTS (SELECT 1 FROM " + SCHEMA + ".streams"
                + " WHERE context = ? AND name = ? AND tenant = ? AND id = ? AND version = ?::integer)"
                + " RETURNING context, name, tenant, id, version)"
                + " INSERT INTO " + SCHEMA + ".events (context, name, tenant, id, version, seq, event_type, body)"
                + " SELECT s.context, s.name, s.tenant, s.id, s.version, e.seq - 1, e.event_type, e.body"
                + " FROM s, unnest(?::text[], ?::bytea[]) WITH ORDINALITY AS e(event_type, body, seq)";
        static final String SELECT_STREAMS = "SELECT s.context, s.name, s.tenant, s.id, s.version, s.request_id, s.command_id,"
                + " e.event_type, e.body FROM " + SCHEMA + ".streams s JOIN " + SCHEMA + ".events e"
                + " USING (context, name, tenant, id, version)"
                + " WHERE s.context = ? AND s.name = ? AND s.tenant = ? AND s.id = ? AND s.version BETWEEN ? AND ?"
                + " ORDER BY s.version, e.seq";
        static final String SELECT_REQUEST = "SELECT EXISTS (SELECT 1 FROM " + SCHEMA + ".streams"
                + " WHERE context = ? AND name = ? AND tenant = ? AND id = ? AND request_id = ?)";

        final String jdbcUrl;
        final Properties props = new Properties();
        final ThreadLocal<Connection> conns = new ThreadLocal<>();

        Store(String url) throws Exception {
            URI u = new URI(url);
            String query = u.getRawQuery() == null ? "" : "?" + u.getRawQuery();
            jdbcUrl = "jdbc:postgresql://" + u.getHost() + ":" + (u.getPort() < 0 ? 5432 : u.getPort()) + u.getRawPath() + query;
            if (u.getRawUserInfo() != null) {
                String[] ui = u.getRawUserInfo().split(":", 2);
                props.setProperty("user", URLDecoder.decode(ui[0], StandardCharsets.UTF_8));
                if (ui.length > 1) {
                    props.setProperty("password", URLDecoder.decode(ui[1], StandardCharsets.UTF_8));
                }
            }
            Connection c = conn();
            c.setAutoCommit(false);
            try (Statement st = c.createStatement()) {
                // Other processes create the schema too: one at a time.
                st.execute("SELECT pg_advisory_xact_lock(7243911)");
                st.execute(DDL);
                c.commit();
            } finally {
                c.setAutoCommit(true);
            }
        }

        Connection conn() throws SQLException {
            Connection c = conns.get();
            if (c == null || c.isClosed()) {
                c = DriverManager.getConnection(jdbcUrl, props);
                conns.set(c);
            }
            return c;
        }

        String version() throws SQLException {
            try (Statement st = conn().createStatement(); ResultSet rs = st.executeQuery("SHOW server_version")) {
                rs.next();
                return "java " + Runtime.version() + ", PostgreSQL " + rs.getString(1) + " through JDBC";
            }
        }

        void append(StreamIn s) throws Refused, SQLException {
            Connection c = conn();
            try (PreparedStatement ps = c.prepareStatement(APPEND)) {
                int i = 1;
                for (String v : new String[] {s.context, s.name, s.tenant, s.id}) {
                    ps.setString(i++, v);
                }
                ps.setLong(i++, s.version);
                ps.setString(i++, s.requestId);
                ps.setString(i++, s.commandId);
                ps.setLong(i++, s.version);
                for (String v : new String[] {s.context, s.name, s.tenant, s.id}) {
                    ps.setString(i++, v);
                }
                ps.setLong(i++, s.version - 1);
                ps.setArray(i++, c.createArrayOf("text", s.types.toArray(new String[0])));
                ps.setArray(i, c.createArrayOf("bytea", s.bodies.toArray(new byte[0][])));
                if (ps.executeUpdate() == 0) {
                    throw s.versionConflict(); // the predecessor is absent: a gap
                }
            } catch (SQLException e) {
                Refused r = conflict(c, s, e);
                if (r != null) {
                    throw r;
                }
                throw e;
            }
        }

        /** The conflict a unique violation stands for, by constraint name; null for any other error. */
        Refused conflict(Connection c, StreamIn s, SQLException e) throws SQLException {
            SQLException cause = e;
            while (cause != null && !"23505".equals(cause.getSQLState())) {
                cause = cause.getNextException();
            }
            if (cause == null) {
                return null;
            }
            String msg = String.valueOf(cause.getMessage());
            if (msg.contains(REQUEST_KEY)) {
                return s.duplicateRequest();
            }
            if (!msg.contains(VERSION_KEY)) {
                return null;
            }
            if (s.version != 1) {
                return s.versionConflict();
            }
            // The aggregate exists. An exact retry (its request id is
            // there) is told so: a stored stream is never removed, so the
            // query after the failed statement sees what the constraint saw.
            return exists(s.context, s.name, s.tenant, s.id, s.requestId) ? s.duplicateRequest() : s.duplicateAggregate();
        }

        List<Object> load(String[] k, long from, long to) throws SQLException {
            List<Object> out = new ArrayList<>();
            try (PreparedStatement ps = conn().prepareStatement(SELECT_STREAMS)) {
                for (int i = 0; i < 4; i++) {
                    ps.setString(i + 1, k[i]);
                }
                ps.setLong(5, from);
                ps.setLong(6, Math.min(to, Integer.MAX_VALUE));
                try (ResultSet rs = ps.executeQuery()) {
                    Map<String, Object> cur = null;
                    while (rs.next()) {
                        long v = rs.getLong(5);
                        if (cur == null || (long) cur.get("version") != v) {
                            cur = new LinkedHashMap<>();
                            Map<String, Object> agg = new LinkedHashMap<>();
                            agg.put("context", rs.getString(1));
                            agg.put("name", rs.getString(2));
                            agg.put("tenant", rs.getString(3));
                            agg.put("id", rs.getString(4));
                            cur.put("aggregate", agg);
                            cur.put("version", v);
                            cur.put("requestId", rs.getString(6));
                            cur.put("commandId", rs.getString(7));
                            cur.put("events", new ArrayList<Object>());
                            out.add(cur);
                        }
                        Map<String, Object> e = new LinkedHashMap<>();
                        e.put("type", rs.getString(8));
                        e.put("body", Base64.getEncoder().encodeToString(rs.getBytes(9)));
                        @SuppressWarnings("unchecked")
                        List<Object> events = (List<Object>) cur.get("events");
                        events.add(e);
                    }
                }
            }
            return out;
        }

        boolean exists(String context, String name, String tenant, String id, String requestId) throws SQLException {
            try (PreparedStatement ps = conn().prepareStatement(SELECT_REQUEST)) {
                ps.setString(1, context);
                ps.setString(2, name);
                ps.setString(3, tenant);
                ps.setString(4, id);
                ps.setString(5, requestId);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return rs.getBoolean(1);
                }
            }
        }
    }

    // ---- the protocol ----------------------------------------------------

    final Store store;
    final PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    final Map<String, Boolean> handles = new ConcurrentHashMap<>();
    final AtomicInteger nextHandle = new AtomicInteger();

    Adapter(Store store) {
        this.store = store;
    }

    void run() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            Object req = Json.parse(line);
            pool.submit(() -> serve(req));
        }
        // stdin ended: the kit is done with this process.
        pool.shutdown();
        pool.awaitTermination(10, TimeUnit.SECONDS);
        System.exit(0);
    }

    void reply(Object id, String status, Map<String, Object> fields) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", id);
        m.put("status", status);
        m.putAll(fields);
        String s = Json.write(m);
        synchronized (out) {
            out.print(s);
            out.print('\n');
            out.flush();
        }
    }

    void ok(Object id, Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        reply(id, "ok", m);
    }

    @SuppressWarnings("unchecked")
    void serve(Object raw) {
        Map<String, Object> req = (Map<String, Object>) raw;
        Object id = req.get("id");
        try {
            String op = String.valueOf(req.get("op"));
            switch (op) {
                case "hello": {
                    Map<String, Object> caps = new LinkedHashMap<>();
                    caps.put("acceptsVersionGap", false);
                    ok(id, "protocol", PROTOCOL, "store", store.version(), "sharedData", true, "capabilities", caps);
                    return;
                }
                case "open": {
                    String h = "h" + nextHandle.incrementAndGet();
                    handles.put(h, true);
                    ok(id, "handle", h);
                    return;
                }
                case "close":
                    handles.put(String.valueOf(req.get("handle")), false);
                    ok(id);
                    return;
                default:
                    break;
            }
            if (!Boolean.TRUE.equals(handles.get(String.valueOf(req.get("handle"))))) {
                throw new Refused("closed", "handle " + req.get("handle") + " is closed or was never opened");
            }
            switch (op) {
                case "append":
                    store.append(stream(req.get("stream")));
                    ok(id);
                    return;
                case "load": {
                    String[] k = key(req.get("aggregate"));
                    Object from = req.get("from"), to = req.get("to");
                    if (!(from instanceof Long) || !(to instanceof Long) || (long) from < 1 || (long) to < (long) from) {
                        throw invalid("version range [" + from + ", " + to + "]");
                    }
                    ok(id, "streams", store.load(k, (long) from, (long) to));
                    return;
                }
                case "exists": {
                    String[] k = key(req.get("aggregate"));
                    Object rid = req.get("requestId");
                    if (!(rid instanceof String)) {
                        throw invalid("requestId must be a string");
                    }
                    ok(id, "exists", store.exists(k[0], k[1], k[2], k[3], (String) rid));
                    return;
                }
                default:
                    throw invalid("unknown op " + op);
            }
        } catch (Refused r) {
            Map<String, Object> f = new LinkedHashMap<>();
            f.put("message", r.getMessage());
            f.putAll(r.fields);
            reply(id, r.status, f);
        } catch (Exception e) { // any other failure is an error, never a conflict
            log("request " + id + ": " + e);
            Map<String, Object> f = new LinkedHashMap<>();
            f.put("message", e.toString());
            reply(id, "error", f);
        }
    }

    @SuppressWarnings("unchecked")
    static String[] key(Object raw) throws Refused {
        if (!(raw instanceof Map)) {
            throw invalid("aggregate must be an object");
        }
        Map<String, Object> a = (Map<String, Object>) raw;
        String[] k = new String[4];
        String[] fields = {"context", "name", "tenant", "id"};
        for (int i = 0; i < 4; i++) {
            if (!(a.get(fields[i]) instanceof String)) {
                throw invalid("aggregate." + fields[i] + " must be a string");
            }
            k[i] = (String) a.get(fields[i]);
        }
        return k;
    }

    @SuppressWarnings("unchecked")
    static StreamIn stream(Object raw) throws Refused {
        if (!(raw instanceof Map)) {
            throw invalid("stream must be an object");
        }
        Map<String, Object> m = (Map<String, Object>) raw;
        StreamIn s = new StreamIn();
        String[] k = key(m.get("aggregate"));
        s.aggregate = (Map<String, Object>) m.get("aggregate");
        s.context = k[0];
        s.name = k[1];
        s.tenant = k[2];
        s.id = k[3];
        if (s.name.isEmpty() || s.id.isEmpty()) {
            throw invalid("aggregate name and id are required");
        }
        if (!(m.get("version") instanceof Long) || (long) m.get("version") < 1) {
            throw invalid("version " + m.get("version") + " is below the initial version 1");
        }
        s.version = (long) m.get("version");
        if (!(m.get("requestId") instanceof String) || ((String) m.get("requestId")).isEmpty()) {
            throw invalid("request id is required");
        }
        s.requestId = (String) m.get("requestId");
        s.commandId = m.get("commandId") instanceof String ? (String) m.get("commandId") : "";
        if (!(m.get("events") instanceof List) || ((List<Object>) m.get("events")).isEmpty()) {
            throw invalid("a stream needs at least one event");
        }
        for (Object o : (List<Object>) m.get("events")) {
            Map<String, Object> e = (Map<String, Object>) o;
            s.types.add(String.valueOf(e.get("type")));
            Object b = e.get("body");
            try {
                s.bodies.add(b == null ? new byte[0] : Base64.getDecoder().decode((String) b));
            } catch (IllegalArgumentException bad) {
                throw invalid("an event body is not base64");
            }
        }
        return s;
    }

    // ---- a small JSON reader and writer (the JDK has none) ---------------

    static final class Json {
        final String s;
        int i;

        Json(String s) {
            this.s = s;
        }

        static Object parse(String s) {
            Json j = new Json(s);
            Object v = j.value();
            j.ws();
            if (j.i != s.length()) {
                throw new IllegalArgumentException("trailing characters at " + j.i);
            }
            return v;
        }

        void ws() {
            while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
        }

        Object value() {
            ws();
            char c = s.charAt(i);
            switch (c) {
                case '{': {
                    i++;
                    Map<String, Object> m = new LinkedHashMap<>();
                    ws();
                    if (s.charAt(i) == '}') {
                        i++;
                        return m;
                    }
                    while (true) {
                        ws();
                        String k = string();
                        ws();
                        expect(':');
                        m.put(k, value());
                        ws();
                        if (s.charAt(i) == ',') {
                            i++;
                            continue;
                        }
                        expect('}');
                        return m;
                    }
                }
                case '[': {
                    i++;
                    List<Object> l = new ArrayList<>();
                    ws();
                    if (s.charAt(i) == ']') {
                        i++;
                        return l;
                    }
                    while (true) {
                        l.add(value());
                        ws();
                        if (s.charAt(i) == ',') {
                            i++;
                            continue;
                        }
                        expect(']');
                        return l;
                    }
                }
                case '"':
                    return string();
                case 't':
                    i += 4;
                    return Boolean.TRUE;
                case 'f':
                    i += 5;
                    return Boolean.FALSE;
                case 'n':
                    i += 4;
                    return null;
                default: {
                    int start = i;
                    while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
                        i++;
                    }
                    String num = s.substring(start, i);
                    if (num.contains(".") || num.contains("e") || num.contains("E")) {
                        return Double.parseDouble(num);
                    }
                    return Long.parseLong(num);
                }
            }
        }

        void expect(char c) {
            if (s.charAt(i) != c) {
                throw new IllegalArgumentException("expected " + c + " at " + i);
            }
            i++;
        }

        String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                char c = s.charAt(i++);
                if (c == '"') {
                    return b.toString();
                }
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                char e = s.charAt(i++);
                switch (e) {
                    case 'n': b.append('\n'); break;
                    case 't': b.append('\t'); break;
                    case 'r': b.append('\r'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'u':
                        b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); // surrogate pairs stay pairs
                        i += 4;
                        break;
                    default: b.append(e); // " \ /
                }
            }
        }

        static String write(Object v) {
            StringBuilder b = new StringBuilder();
            write(b, v);
            return b.toString();
        }

        @SuppressWarnings("unchecked")
        static void write(StringBuilder b, Object v) {
            if (v == null) {
                b.append("null");
            } else if (v instanceof String) {
                quote(b, (String) v);
            } else if (v instanceof Boolean || v instanceof Number) {
                b.append(v);
            } else if (v instanceof Map) {
                b.append('{');
                boolean first = true;
                for (Map.Entry<String, Object> e : ((Map<String, Object>) v).entrySet()) {
                    if (!first) {
                        b.append(',');
                    }
                    first = false;
                    quote(b, e.getKey());
                    b.append(':');
                    write(b, e.getValue());
                }
                b.append('}');
            } else if (v instanceof List) {
                b.append('[');
                boolean first = true;
                for (Object o : (List<Object>) v) {
                    if (!first) {
                        b.append(',');
                    }
                    first = false;
                    write(b, o);
                }
                b.append(']');
            } else {
                quote(b, v.toString());
            }
        }

        static void quote(StringBuilder b, String s) {
            b.append('"');
            for (int k = 0; k < s.length(); k++) {
                char c = s.charAt(k);
                if (c == '"' || c == '\\') {
                    b.append('\\').append(c);
                } else if (c < 0x20 || c > 0x7e) {
                    b.append(String.format("\\u%04x", (int) c)); // UTF-16 units: pairs survive
                } else {
                    b.append(c);
                }
            }
            b.append('"');
        }
    }
}
