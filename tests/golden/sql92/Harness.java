import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.rocketmq.filter.parser.SelectorParser;
import org.apache.rocketmq.filter.expression.*;

public class Harness {
    static String d(String s) { return new String(Base64.getDecoder().decode(s), StandardCharsets.UTF_8); }
    static String e(String s) { return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8)); }
    public static void main(String[] a) throws Exception {
        BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = r.readLine()) != null) {
            String[] parts = line.split(" ", -1);
            String expr = d(parts[0]);
            BooleanExpression be;
            try {
                be = SelectorParser.parse(expr);
            } catch (MQFilterException ex) {
                System.out.println("P " + e(ex.getMessage()));
                continue;
            } catch (Throwable t) {
                System.out.println("P " + e("UNCAUGHT " + t));
                continue;
            }
            StringBuilder out = new StringBuilder("E");
            for (int i = 1; i < parts.length; i++) {
                final Map<String, String> props = new HashMap<String, String>();
                String ctx = d(parts[i]);
                if (!ctx.isEmpty()) for (String kv : ctx.split("\u0002")) { String[] p = kv.split("\u0001", 2); props.put(p[0], p[1]); }
                EvaluationContext c = new EvaluationContext() {
                    public Object get(String name) { return props.get(name); }
                    public Map<String, Object> keyValues() { return null; }
                };
                try {
                    Object v = be.evaluate(c);
                    out.append(v == null ? " N" : (v == Boolean.TRUE ? " T" : (v == Boolean.FALSE ? " F" : " ?" + v)));
                } catch (Throwable t) { out.append(" X"); }
            }
            System.out.println(out);
        }
    }
}
