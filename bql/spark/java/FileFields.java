package sbpy.spark;

import java.io.IOException;
import org.apache.spark.sql.api.java.UDF3;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * {@code sbpy_file_fields(path, spec, keys)}: the lines of one file segment block with each line's JSON pass
 * done, in one call on the executor (see bql/spark/native_query.py, which explodes the result).
 *
 * <p>{@code path} and {@code spec} are {@code sbpy_file_lines}' (FileLines: the same reads, the same checks,
 * the same lines). {@code keys} is the top-level keys the chain reads (a spec of {@link JsonScan.Keys}). Each
 * line gives one element: {@code [line, "", class_0, text_0, number_0, class_1, ...]} ({@link JsonScan}'s
 * three elements per key from index 2) when the scan vouches for the line, or {@code [line]} alone when it
 * refuses it. Every text is a view of the block's bytes: no line is decoded to a Java string and no value is
 * copied.
 */
public final class FileFields implements UDF3<String, String, String, UTF8String[][]> {
  private static final long serialVersionUID = 1L;
  private static final UTF8String ACCEPTED = UTF8String.fromString("");
  private String lastSpec;
  private JsonScan.Keys keys;

  @Override
  public UTF8String[][] call(String path, String spec, String keySpec) throws IOException {
    if (keySpec == null) {
      throw new IllegalArgumentException("sbpy_file_fields: null keys");
    }
    if (!keySpec.equals(lastSpec)) {
      keys = new JsonScan.Keys(keySpec);
      lastSpec = keySpec;
    }
    UTF8String[] lines = FileLines.lines("sbpy_file_fields", path, spec);
    UTF8String[][] out = new UTF8String[lines.length][];
    int width = 2 + keys.width();
    for (int i = 0; i < lines.length; i++) {
      UTF8String line = lines[i];
      byte[] bytes = (byte[]) line.getBaseObject();
      int from = (int) (line.getBaseOffset() - Platform.BYTE_ARRAY_OFFSET);
      UTF8String[] row = new UTF8String[width];
      if (JsonScan.scan(bytes, from, from + line.numBytes(), keys, row, 2)) {
        row[0] = line;
        row[1] = ACCEPTED;
        out[i] = row;
      } else {
        out[i] = new UTF8String[] {line};
      }
    }
    return out;
  }
}
