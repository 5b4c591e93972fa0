// Drives `strata serve --pg` with pgjdbc (org.postgresql:postgresql from Maven Central),
// checking every answer, arrays included. Usage: java -cp postgresql.jar PgJdbc.java PORT
// Prints "all checks passed" at the end; any failed check throws.

import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

public class PgJdbc {
    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/jdbcdb";
        try (Connection c = DriverManager.getConnection(url, "tester", "")) {
            DatabaseMetaData md = c.getMetaData();
            check(md.getDatabaseProductName().equals("PostgreSQL"), md.getDatabaseProductName());
            check(md.getDatabaseMajorVersion() == 16, "major " + md.getDatabaseMajorVersion());
            try (Statement s = c.createStatement()) {
                s.execute("CREATE TABLE cpu (host VARCHAR TAG, time TIMESTAMP, usage DOUBLE, n BIGINT)");
            }
            // Inserts through a prepared statement, run often enough to be prepared on the server.
            try (PreparedStatement p = c.prepareStatement(
                    "INSERT INTO cpu (time, host, usage, n) VALUES (?, ?, ?, ?)")) {
                for (int i = 0; i < 10; i++) {
                    p.setTimestamp(1, java.sql.Timestamp.valueOf("2026-01-01 00:00:0" + i));
                    p.setString(2, i % 2 == 0 ? "a" : "b");
                    p.setDouble(3, i + 0.5);
                    p.setLong(4, i);
                    check(p.executeUpdate() == 1, "insert " + i);
                }
            }
            try (Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT host, sum(n) AS n, max(usage) AS top FROM cpu GROUP BY host ORDER BY host")) {
                check(rs.next() && rs.getString(1).equals("a") && rs.getLong(2) == 20 && rs.getDouble(3) == 8.5, "group a");
                check(rs.next() && rs.getString(1).equals("b") && rs.getLong(2) == 25 && rs.getDouble(3) == 9.5, "group b");
                check(!rs.next(), "two groups");
            }
            // Lists arrive as Postgres arrays: text at first, binary once the statement is
            // prepared on the server (the fifth run).
            try (PreparedStatement p = c.prepareStatement(
                    "SELECT array_agg(n ORDER BY time) AS ns, array_agg(host ORDER BY time) AS hosts FROM cpu WHERE usage < ?")) {
                for (int i = 0; i < 7; i++) {
                    p.setDouble(1, 3.0);
                    try (ResultSet rs = p.executeQuery()) {
                        check(rs.next(), "array row");
                        check(rs.getMetaData().getColumnTypeName(1).equals("_int8"), rs.getMetaData().getColumnTypeName(1));
                        Long[] ns = (Long[]) rs.getArray(1).getArray();
                        String[] hosts = (String[]) rs.getArray(2).getArray();
                        check(Arrays.equals(ns, new Long[] {0L, 1L, 2L}), "ns " + Arrays.toString(ns));
                        check(Arrays.equals(hosts, new String[] {"a", "b", "a"}), "hosts " + Arrays.toString(hosts));
                    }
                }
            }
            // Arrays as parameters: java.sql.Array bound to ANY(?).
            try (PreparedStatement p = c.prepareStatement("SELECT count(*) FROM cpu WHERE host = ANY(?) AND n = ANY(?)")) {
                for (int i = 0; i < 7; i++) {
                    p.setArray(1, c.createArrayOf("text", new String[] {"a", "z'z"}));
                    p.setArray(2, c.createArrayOf("int8", new Long[] {2L, 3L, 4L, null}));
                    try (ResultSet rs = p.executeQuery()) {
                        check(rs.next() && rs.getLong(1) == 2, "ANY(array parameters)");
                    }
                }
            }
            try (PreparedStatement p = c.prepareStatement("SELECT count(*) FROM cpu WHERE host = ? AND usage > ?")) {
                for (int i = 0; i < 7; i++) {
                    p.setString(1, "a");
                    p.setDouble(2, 4.0);
                    try (ResultSet rs = p.executeQuery()) {
                        check(rs.next() && rs.getLong(1) == 3, "prepared count");
                    }
                }
            }
            // A fetch size outside autocommit reads the result through a portal, 3 rows at a time.
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.setFetchSize(3);
                List<Long> seen = new ArrayList<>();
                try (ResultSet rs = s.executeQuery("SELECT n FROM cpu ORDER BY time")) {
                    while (rs.next()) {
                        seen.add(rs.getLong(1));
                    }
                }
                check(seen.size() == 10 && seen.get(9) == 9, "fetched " + seen);
            }
            c.commit();
            c.setAutoCommit(true);
            // Metadata as DBeaver and other JDBC tools ask for it.
            List<String> tables = new ArrayList<>();
            try (ResultSet rs = md.getTables(null, null, "%", new String[] {"TABLE"})) {
                while (rs.next()) {
                    tables.add(rs.getString("TABLE_SCHEM") + "." + rs.getString("TABLE_NAME"));
                }
            }
            check(tables.equals(List.of("jdbcdb.cpu")), "tables " + tables);
            List<String> columns = new ArrayList<>();
            try (ResultSet rs = md.getColumns(null, null, "cpu", "%")) {
                while (rs.next()) {
                    columns.add(rs.getString("COLUMN_NAME") + " " + rs.getString("TYPE_NAME"));
                }
            }
            check(columns.equals(List.of("time timestamp", "host text", "usage float8", "n int8")), "columns " + columns);
            List<String> schemas = new ArrayList<>();
            try (ResultSet rs = md.getSchemas()) {
                while (rs.next()) {
                    schemas.add(rs.getString("TABLE_SCHEM"));
                }
            }
            check(schemas.equals(List.of("information_schema", "jdbcdb", "pg_catalog")), "schemas " + schemas);
            // Keys and indexes: a Strata table has none. The foreign-key calls first read
            // max_index_keys from pg_settings (as Tableau does on connecting).
            check(count(md.getPrimaryKeys(null, null, "cpu")) == 0, "primary keys");
            check(count(md.getImportedKeys(null, null, "cpu")) == 0, "imported keys");
            check(count(md.getExportedKeys(null, null, "cpu")) == 0, "exported keys");
            check(count(md.getIndexInfo(null, null, "cpu", false, true)) == 0, "indexes");
            // The types, with JDBC's codes for them (as Postgres lists the same types).
            List<String> types = new ArrayList<>();
            try (ResultSet rs = md.getTypeInfo()) {
                while (rs.next()) {
                    types.add(rs.getString("TYPE_NAME") + " " + rs.getInt("DATA_TYPE"));
                }
            }
            for (String type : List.of("int8 -5", "float8 8", "text 12", "timestamp 93", "bool -7", "_int8 2003", "name 12")) {
                check(types.contains(type), type + " not among the types " + types);
            }
            // Its length comes from pg_type's `name` row.
            try (ResultSet rs = md.getClientInfoProperties()) {
                check(rs.next() && "ApplicationName".equals(rs.getString("NAME")) && rs.getInt("MAX_LEN") == 63,
                        "client info properties");
            }
            try (Statement s = c.createStatement()) {
                s.executeQuery("SELECT * FROM nope");
                check(false, "no error for an unknown table");
            } catch (SQLException e) {
                check("42P01".equals(e.getSQLState()), "sqlstate " + e.getSQLState());
            }
        }
        System.out.println("all checks passed");
    }

    /** The rows of {@code rs}, which it closes. */
    static int count(ResultSet rs) throws SQLException {
        try (rs) {
            int n = 0;
            while (rs.next()) {
                n++;
            }
            return n;
        }
    }
}
