package sbpy.spark;

import org.apache.spark.sql.api.java.UDF2;

/**
 * {@code sbpy_json_fields(line, keys)}: the native tier's one pass over a JSON line (see
 * bql/spark/native_stage.py).
 *
 * <p>{@code keys} is the top-level keys a chain reads, joined by U+0001. The result has two elements per key,
 * at {@code 2k} and {@code 2k+1}: the class of the key's (last) value (one character) and its JSON text, both
 * null when the object has no such key. (Two elements, not one string to cut: a cut is a copy per use.) Classes: {@code i} an integer of at most 15 digits (not -0: exact as a double, written as
 * read), {@code f} a plain decimal whose text is what sbpy writes for its float (at most 15 digits, no
 * trailing zero except {@code .0}, not below 1e-5), {@code d} any other plain decimal (exact as a double,
 * not written as read), {@code s} a string without escapes, {@code b} true or false, {@code n} null,
 * {@code x} anything else (a container, a long integer, -0).
 *
 * <p>The whole result is null — the row takes the Python kernel — unless the line is one JSON object this
 * scanner is sure Python reads the same way: strict RFC 8259 syntax, no backslash or control character in
 * any string, no exponent, no run of 19 or more digits, nesting at most 64 deep. Refusing more than needed
 * is always safe; accepting a line the kernel reads differently is a bug.
 */
public final class JsonFields implements UDF2<String, String, String[]> {
  private static final long serialVersionUID = 1L;
  private String lastSpec;
  private String[] keys;

  @Override
  public String[] call(String line, String spec) {
    if (line == null || spec == null) {
      return null;
    }
    if (!spec.equals(lastSpec)) {
      keys = spec.isEmpty() ? new String[0] : spec.split("\u0001", -1);
      lastSpec = spec;
    }
    Scanner s = new Scanner(line, keys);
    return s.object() ? s.found : null;
  }

  /** The class characters as strings (one shared instance each). */
  private static final String[] CLASS_NAMES = new String[128];

  static {
    for (char c : "ifdsbnx".toCharArray()) {
      CLASS_NAMES[c] = String.valueOf(c);
    }
  }

  /** One pass over one line; {@code pos} moves forward only. */
  static final class Scanner {
    private final String text;
    private final int end;
    private final String[] keys;
    final String[] found;
    private int pos;

    Scanner(String text, String[] keys) {
      this.text = text;
      this.end = text.length();
      this.keys = keys;
      this.found = new String[2 * keys.length];
    }

    private void ws() {
      while (pos < end) {
        char c = text.charAt(pos);
        if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
          return;
        }
        pos++;
      }
    }

    /** The top-level object and nothing after it but whitespace. */
    boolean object() {
      ws();
      if (pos >= end || text.charAt(pos) != '{') {
        return false;
      }
      pos++;
      ws();
      if (pos < end && text.charAt(pos) == '}') {
        pos++;
      } else {
        while (true) {
          int keyStart = pos;
          if (!string()) {
            return false;
          }
          int slot = slotOf(keyStart + 1, pos - 1);
          ws();
          if (pos >= end || text.charAt(pos) != ':') {
            return false;
          }
          pos++;
          ws();
          int valueStart = pos;
          char cls = value(1);
          if (cls == 0) {
            return false;
          }
          if (slot >= 0) {
            found[2 * slot] = CLASS_NAMES[cls];
            found[2 * slot + 1] = text.substring(valueStart, pos);
          }
          ws();
          if (pos >= end) {
            return false;
          }
          char c = text.charAt(pos++);
          if (c == '}') {
            break;
          }
          if (c != ',') {
            return false;
          }
          ws();
        }
      }
      ws();
      return pos == end;
    }

    private int slotOf(int from, int to) {
      int len = to - from;
      for (int k = 0; k < keys.length; k++) {
        String key = keys[k];
        if (key.length() == len && text.regionMatches(from, key, 0, len)) {
          return k;
        }
      }
      return -1;
    }

    /** A string at {@code pos} without escapes or control characters; false otherwise. */
    private boolean string() {
      if (pos >= end || text.charAt(pos) != '"') {
        return false;
      }
      pos++;
      while (pos < end) {
        char c = text.charAt(pos++);
        if (c == '"') {
          return true;
        }
        if (c == '\\' || c < 0x20) {
          return false;
        }
      }
      return false;
    }

    /** One value at {@code pos}: its class, or 0 when the line is refused. */
    private char value(int depth) {
      if (pos >= end) {
        return 0;
      }
      char c = text.charAt(pos);
      switch (c) {
        case '"':
          return string() ? 's' : 0;
        case 't':
          return word("true") ? 'b' : 0;
        case 'f':
          return word("false") ? 'b' : 0;
        case 'n':
          return word("null") ? 'n' : 0;
        case '[':
          return container(depth + 1, false) ? 'x' : 0;
        case '{':
          return container(depth + 1, true) ? 'x' : 0;
        default:
          return (c == '-' || (c >= '0' && c <= '9')) ? number() : 0;
      }
    }

    private boolean word(String w) {
      if (text.startsWith(w, pos)) {
        pos += w.length();
        return true;
      }
      return false;
    }

    /** An array or a nested object at {@code pos}, nested at most 64 deep. */
    private boolean container(int depth, boolean object) {
      if (depth > 64) {
        return false;
      }
      char close = object ? '}' : ']';
      pos++;
      ws();
      if (pos < end && text.charAt(pos) == close) {
        pos++;
        return true;
      }
      while (true) {
        ws();
        if (object) {
          if (!string()) {
            return false;
          }
          ws();
          if (pos >= end || text.charAt(pos) != ':') {
            return false;
          }
          pos++;
          ws();
        }
        if (value(depth) == 0) {
          return false;
        }
        ws();
        if (pos >= end) {
          return false;
        }
        char c = text.charAt(pos++);
        if (c == close) {
          return true;
        }
        if (c != ',') {
          return false;
        }
      }
    }

    /** {@code -?(0|[1-9][0-9]*)(\.[0-9]+)?}, classified; an exponent or 19+ digits refuse the line. */
    private char number() {
      boolean negative = text.charAt(pos) == '-';
      if (negative) {
        pos++;
      }
      int intStart = pos;
      while (pos < end && isDigit(text.charAt(pos))) {
        pos++;
      }
      int intDigits = pos - intStart;
      if (intDigits == 0 || intDigits > 18 || (intDigits > 1 && text.charAt(intStart) == '0')) {
        return 0;
      }
      int fracDigits = -1;
      int fracStart = pos + 1;
      if (pos < end && text.charAt(pos) == '.') {
        pos++;
        while (pos < end && isDigit(text.charAt(pos))) {
          pos++;
        }
        fracDigits = pos - fracStart;
        if (fracDigits == 0 || fracDigits > 18) {
          return 0;
        }
      }
      if (pos < end) {
        char c = text.charAt(pos);
        if (c == 'e' || c == 'E' || c == '.' || isDigit(c)) {
          return 0;
        }
      }
      boolean zeroInt = intDigits == 1 && text.charAt(intStart) == '0';
      if (fracDigits < 0) {
        if (intDigits > 15 || (negative && zeroInt)) {
          return 'x';
        }
        return 'i';
      }
      return canonicalFloat(intStart, intDigits, zeroInt, fracStart, fracDigits) ? 'f' : 'd';
    }

    /** Whether sbpy writes the float of this decimal exactly as it is written here. */
    private boolean canonicalFloat(int intStart, int intDigits, boolean zeroInt, int fracStart, int fracDigits) {
      if (intDigits + fracDigits > 15) {
        return false;
      }
      char last = text.charAt(fracStart + fracDigits - 1);
      if (last == '0') {
        return fracDigits == 1;  // "7.0" is written "7.0"; "7.50" is written "7.5"
      }
      if (zeroInt) {  // below 1: at most four zeros after the point (1e-5 and up are written plainly)
        int zeros = 0;
        while (zeros < fracDigits && text.charAt(fracStart + zeros) == '0') {
          zeros++;
        }
        return zeros <= 4;
      }
      return true;
    }

    private static boolean isDigit(char c) {
      return c >= '0' && c <= '9';
    }
  }
}
