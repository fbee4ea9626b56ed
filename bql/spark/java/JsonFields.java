package sbpy.spark;

import java.nio.charset.StandardCharsets;
import org.apache.spark.sql.api.java.UDF2;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * {@code sbpy_json_fields(line, keys)}: the native tier's one pass over a JSON line that reached Spark as a
 * string (see bql/spark/native_stage.py; lines read from a file segment take {@code sbpy_file_fields}).
 *
 * <p>{@code keys} is the top-level keys a chain reads (a spec of {@link JsonScan.Keys}). The result has three
 * elements per key from index 0 — class, JSON text, number key — as {@link JsonScan} says (which lines and
 * values it vouches for, too). The whole result is null — the row takes the Python kernel — when the scan
 * refuses the line.
 */
public final class JsonFields implements UDF2<String, String, UTF8String[]> {
  private static final long serialVersionUID = 1L;
  private String lastSpec;
  private JsonScan.Keys keys;

  @Override
  public UTF8String[] call(String line, String spec) {
    if (line == null || spec == null) {
      return null;
    }
    if (!spec.equals(lastSpec)) {
      keys = new JsonScan.Keys(spec);
      lastSpec = spec;
    }
    byte[] bytes = line.getBytes(StandardCharsets.UTF_8);
    UTF8String[] found = new UTF8String[keys.width()];
    return JsonScan.scan(bytes, 0, bytes.length, keys, found, 0) ? found : null;
  }
}
