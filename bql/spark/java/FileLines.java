package sbpy.spark;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32;
import org.apache.spark.sql.api.java.UDF2;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * {@code sbpy_file_lines(path, spec)}: the lines of one file segment block, read on the executor (see
 * bql/spark/native_source.py, which decides which blocks come here, and native_query.py, which explodes
 * the result).
 *
 * <p>{@code spec} is {@code "start,end,crc,n,skip,count"}: the segment is bytes {@code [start, end)} of
 * {@code path}, whose CRC-32 is {@code crc} and which holds {@code n} lines; the result is its lines
 * {@code skip .. skip+count-1}. A line is split at {@code '\n'} exactly as the Python reader splits it: each
 * line keeps its newline ({@code '\r'} and all other bytes included), the segment's last line may lack it,
 * and the empty piece after a final newline is no line. Each element is a view of the segment's bytes (no
 * copy, no decode).
 *
 * <p>The Python reader sent the block here only after reading the same bytes itself (same length, same CRC,
 * valid UTF-8). If this read finds anything else — the file shorter, another CRC, bytes that are not UTF-8,
 * another line count, a range outside the segment — the bytes are not the ones the journal describes and
 * the call throws: the task, and so the micro-batch, fails; no other rows are ever produced.
 */
public final class FileLines implements UDF2<String, String, UTF8String[]> {
  private static final long serialVersionUID = 1L;

  @Override
  public UTF8String[] call(String path, String spec) throws IOException {
    return lines("sbpy_file_lines", path, spec);
  }

  /** The block's lines, as {@code call} returns them (also FileFields' lines); {@code function} names the
   * SQL function in the errors. */
  static UTF8String[] lines(String function, String path, String spec) throws IOException {
    if (path == null || spec == null) {
      throw new IllegalArgumentException(function + ": null path or spec");
    }
    String[] parts = spec.split(",", -1);
    if (parts.length != 6) {
      throw new IllegalArgumentException(function + ": bad spec '" + spec + "'");
    }
    long start = Long.parseLong(parts[0]);
    long end = Long.parseLong(parts[1]);
    long crc = Long.parseLong(parts[2]);
    int n = Integer.parseInt(parts[3]);
    int skip = Integer.parseInt(parts[4]);
    int count = Integer.parseInt(parts[5]);
    String where = function + ": " + path + ": bytes " + start + "-" + end;  // every later error's prefix
    if (start < 0 || end < start || end - start > Integer.MAX_VALUE - 16 || skip < 0 || count < 0
        || (long) skip + count > n) {
      throw new IllegalArgumentException(where + ": bad spec '" + spec + "'");
    }
    byte[] bytes = read(path, start, (int) (end - start), where);
    CRC32 check = new CRC32();
    check.update(bytes, 0, bytes.length);
    if (check.getValue() != crc) {
      throw new IllegalStateException(where + " changed since they were journaled"
          + " (CRC " + check.getValue() + ", journaled " + crc + ")");
    }
    return split(bytes, n, skip, count, where);
  }

  private static byte[] read(String path, long start, int length, String where) throws IOException {
    byte[] bytes = new byte[length];
    try (RandomAccessFile file = new RandomAccessFile(path, "r")) {
      if (file.length() < start + length) {
        throw new IllegalStateException(where + ": the file is shorter ("
            + file.length() + " bytes) than when it was journaled");
      }
      file.seek(start);
      file.readFully(bytes);
    }
    return bytes;
  }

  /** Throws unless {@code bytes} is strict UTF-8 (what Python's decoder accepts). */
  private static void validateUtf8(byte[] bytes, String where) {
    try {
      StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes));
    } catch (CharacterCodingException e) {
      throw new IllegalStateException(where + " are not UTF-8 any more", e);
    }
  }

  /** Lines {@code skip .. skip+count-1} of a segment that must hold {@code n} lines and be strict UTF-8
   * (the split notes any byte above 0x7f on its way; only then does the decoder check the block). */
  static UTF8String[] split(byte[] bytes, int n, int skip, int count, String where) {
    UTF8String[] out = new UTF8String[count];
    int line = 0;
    int from = 0;
    int last = skip + count;
    int length = bytes.length;
    int high = 0;
    while (from < length) {
      int nl = from;
      byte b;
      while (nl < length && (b = bytes[nl]) != '\n') {
        high |= b;
        nl++;
      }
      int to = nl < length ? nl + 1 : length;  // the line with its newline
      if (line >= skip && line < last) {
        out[line - skip] = UTF8String.fromBytes(bytes, from, to - from);
      }
      line++;
      from = to;
    }
    if (high < 0) {
      validateUtf8(bytes, where);
    }
    if (line != n) {
      throw new IllegalStateException(where + " hold " + line
          + " lines, the journal says " + n);
    }
    return out;
  }
}
