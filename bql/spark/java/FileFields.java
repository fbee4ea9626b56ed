package sbpy.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.objects.StaticInvoke;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.AbstractDataType;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;
import scala.collection.immutable.Nil$;
import scala.collection.immutable.Seq;
import scala.runtime.AbstractFunction1;

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
 *
 * <p>The function is not a Java UDF: a UDF's {@code UTF8String[][]} result passes through Spark's
 * converters into Catalyst arrays (a new array and a type test per element, 15–20 % of a B1 profile), while
 * {@link #fields} builds the Catalyst arrays over its own element arrays. {@link Builder} makes each call a
 * {@code StaticInvoke} of it (generated code calls the method directly; a NULL argument gives NULL);
 * bql/spark/native_udf.py registers the builder with the session.
 */
public final class FileFields {
  private static final UTF8String ACCEPTED = UTF8String.fromString("");
  // the parsed key specs of the chains this JVM ran (few; emptied past KEEP_KEYS so it stays bounded)
  private static final ConcurrentHashMap<String, JsonScan.Keys> KEYS = new ConcurrentHashMap<>();
  private static final int KEEP_KEYS = 64;

  private FileFields() {}

  /** The block's lines with their fields, as Catalyst arrays (see the class comment). */
  public static ArrayData fields(UTF8String path, UTF8String spec, UTF8String keySpec) {
    if (KEYS.size() > KEEP_KEYS) {
      KEYS.clear();
    }
    JsonScan.Keys keys = KEYS.computeIfAbsent(keySpec.toString(), JsonScan.Keys::new);
    UTF8String[] lines;
    try {
      lines = FileLines.lines("sbpy_file_fields", path.toString(), spec.toString());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Object[] out = new Object[lines.length];
    int width = 2 + keys.width();
    for (int i = 0; i < lines.length; i++) {
      UTF8String line = lines[i];
      byte[] bytes = (byte[]) line.getBaseObject();
      int from = (int) (line.getBaseOffset() - Platform.BYTE_ARRAY_OFFSET);
      UTF8String[] row = new UTF8String[width];
      if (JsonScan.scan(bytes, from, from + line.numBytes(), keys, row, 2)) {
        row[0] = line;
        row[1] = ACCEPTED;
        out[i] = new GenericArrayData((Object[]) row);  // read only: a UTF8String[] is an Object[]
      } else {
        out[i] = new GenericArrayData(new Object[] {line});
      }
    }
    return new GenericArrayData(out);
  }

  /** The function builder: {@code sbpy_file_fields(a, b, c)} → {@code StaticInvoke(FileFields.fields)}. */
  public static final class Builder extends AbstractFunction1<Seq<Expression>, Expression>
      implements java.io.Serializable {
    private static final long serialVersionUID = 1L;

    @Override
    @SuppressWarnings("unchecked")
    public Expression apply(Seq<Expression> args) {
      if (args.size() != 3) {
        throw new IllegalArgumentException("sbpy_file_fields takes 3 arguments, not " + args.size());
      }
      Seq<AbstractDataType> anyTypes = (Seq<AbstractDataType>) (Seq<?>) Nil$.MODULE$;
      return new StaticInvoke(FileFields.class,
          new ArrayType(new ArrayType(DataTypes.StringType, true), true), "fields", args, anyTypes,
          true, true, true, scala.Option.empty());
    }
  }
}
