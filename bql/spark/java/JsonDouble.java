package sbpy.spark;

import com.fasterxml.jackson.core.io.schubfach.DoubleToDecimal;
import org.apache.spark.sql.api.java.UDF1;

/**
 * {@code sbpy_json_double(x)}: the JSON text sbpy writes for the double {@code x} ({@code jsonio.to_json}:
 * orjson's shortest round-trip digits), or null when this function is not sure of it — the row then takes
 * the Python kernel (see bql/spark/native_arith.py).
 *
 * <p>The digits come from Jackson's port of the Schubfach algorithm (JDK 19's {@code Double.toString}): the
 * shortest decimal that reads back as {@code x}, the closest to it among those. One rule differs from
 * Python's: when a one-digit decimal reads back as {@code x}, Schubfach may prefer a closer two-digit one
 * (4.9E-324 where Python writes 5e-324); such values answer null. The layout is orjson's: plain
 * notation for 1e-5 &lt;= |x| &lt; 1e16 (with {@code .0} for an integral value), else {@code d[.ddd]e±n}.
 * NaN and the infinities answer null (the kernel decides what they become).
 */
public final class JsonDouble implements UDF1<Double, String> {
  private static final long serialVersionUID = 1L;

  @Override
  public String call(Double x) {
    return x == null ? null : format(x);
  }

  static String format(double v) {
    if (Double.isNaN(v) || Double.isInfinite(v)) {
      return null;
    }
    String s = DoubleToDecimal.toString(v);
    boolean negative = s.charAt(0) == '-';
    int from = negative ? 1 : 0;
    int e = s.indexOf('E');
    String mantissa = e < 0 ? s.substring(from) : s.substring(from, e);
    int exponent = e < 0 ? 0 : Integer.parseInt(s.substring(e + 1));
    int dot = mantissa.indexOf('.');
    // value = 0.digits * 10^point
    String digits = mantissa.substring(0, dot) + mantissa.substring(dot + 1);
    int point = dot + exponent;
    int lead = 0;
    while (lead < digits.length() - 1 && digits.charAt(lead) == '0') {
      lead++;
    }
    int end = digits.length();
    while (end > lead + 1 && digits.charAt(end - 1) == '0') {
      end--;
    }
    digits = digits.substring(lead, end);
    point -= lead;
    if (digits.equals("0")) {
      return negative ? "-0.0" : "0.0";
    }
    if (digits.length() == 2 && oneDigitReadsBack(v, digits, point)) {
      return null;
    }
    StringBuilder out = new StringBuilder(digits.length() + 8);
    if (negative) {
      out.append('-');
    }
    int scientific = point - 1;  // value = d.ddd * 10^scientific
    if (scientific >= -5 && scientific < 16) {
      if (point <= 0) {
        out.append("0.");
        for (int i = point; i < 0; i++) {
          out.append('0');
        }
        out.append(digits);
      } else if (point >= digits.length()) {
        out.append(digits);
        for (int i = digits.length(); i < point; i++) {
          out.append('0');
        }
        out.append(".0");
      } else {
        out.append(digits, 0, point).append('.').append(digits, point, digits.length());
      }
    } else {
      out.append(digits.charAt(0));
      if (digits.length() > 1) {
        out.append('.').append(digits, 1, digits.length());
      }
      out.append('e').append(scientific < 0 ? '-' : '+').append(Math.abs(scientific));
    }
    return out.toString();
  }

  /** Whether a one-digit decimal next to the two-digit {@code 0.digits * 10^point} reads back as |v|. */
  private static boolean oneDigitReadsBack(double v, String digits, int point) {
    double magnitude = Math.abs(v);
    int first = digits.charAt(0) - '0';
    for (int d = first; d <= first + 1; d++) {
      String candidate = d + "E" + (point - 1);  // d * 10^(point-1); d = 10 is 1 * 10^point
      if (Double.parseDouble(candidate) == magnitude) {
        return true;
      }
    }
    return false;
  }
}
