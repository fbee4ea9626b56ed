package sbpy.spark;

import org.apache.spark.sql.api.java.UDF1;

/**
 * {@code sbpy_key_double(key)}: the double whose number key ({@link JsonScan#numberKey}) is {@code key} — the
 * exact value of a numeric field for the native tier's arithmetic (bql/spark/native_arith.py), including the
 * decimals whose text the pass does not give ({@code d}). The key writes -0.0 as 0.0; the caller refuses
 * the zeros whose sign it cannot vouch for.
 */
public final class KeyDouble implements UDF1<String, Double> {
  private static final long serialVersionUID = 1L;

  @Override
  public Double call(String key) {
    if (key == null) {
      return null;
    }
    long k = Long.parseUnsignedLong(key, 16);
    return Double.longBitsToDouble(k < 0 ? k ^ Long.MIN_VALUE : ~k);
  }
}
