package sbpy.spark;

import java.nio.charset.StandardCharsets;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The native tier's one pass over a JSON line's UTF-8 bytes (see bql/spark/native_stage.py): used by
 * {@code sbpy_json_fields} (JsonFields) and {@code sbpy_file_fields} (FileFields).
 *
 * <p>{@link #scan} writes three elements per wanted path (a top-level key, then keys and array indexes
 * below it: {@link Keys}), at {@code base + 3k}, {@code base + 3k + 1} and {@code base + 3k + 2}, all null
 * when the object has nothing there (a step missing, or through a value of another kind):
 * <ul>
 *   <li>the class of the path's value (a repeated key's last, as Python reads it), one character;
 *   <li>its JSON text, a view of the line's bytes (no copy, no decode) — only where it is what sbpy writes
 *       for the value, so a chain may write it back: null for {@code d}; for {@code x} (a container, a long
 *       integer) its compact text when the value is canonical (as for {@code *} below), else null;
 *   <li>for a key wanted as a number (prefixed by {@code #} in the key spec) whose class is {@code i},
 *       {@code f} or {@code d}: its number key ({@link #numberKey}).
 * </ul>
 * A spec item {@code *} asks for the whole line instead: class {@code x} and, when the line is canonical —
 * every scalar written as sbpy writes its value ({@code i} and longer integers but -0, {@code f}, {@code s},
 * {@code b}, {@code n}: no {@code d}), no repeated key and no key starting with {@code $} in any object —
 * its compact text (whitespace outside strings removed), which is then what sbpy writes for the line's map,
 * plain and tagged; null text otherwise.
 * Classes: {@code i} an integer of at most 15 digits (not -0: exact as a double, written as read), {@code f}
 * a plain decimal whose text is what sbpy writes for its float (at most 15 digits, no trailing zero except
 * {@code .0}, not below 1e-5), {@code d} any other plain decimal (exact as a double, not written as read),
 * {@code s} a string without escapes, {@code b} true or false, {@code n} null, {@code x} anything else (a
 * container, a long integer, -0).
 *
 * <p>It returns false — the row takes the Python kernel — unless the line is one JSON object this scanner is
 * sure Python reads the same way: strict RFC 8259 syntax, no backslash or control character in any string, no
 * exponent, no run of 19 or more digits, nesting at most 64 deep. Refusing more than needed is always safe;
 * accepting a line the kernel reads differently is a bug. The bytes must be UTF-8 (both callers ensure it):
 * every structural character is ASCII, and every byte of a multi-byte character is 0x80 or above, so a scan
 * over the bytes decides exactly what a scan over the characters would.
 */
final class JsonScan {
  private static final UTF8String[] CLASS_NAMES = new UTF8String[128];

  static {
    for (char c : "ifdsbnx".toCharArray()) {
      CLASS_NAMES[c] = UTF8String.fromString(String.valueOf(c));
    }
  }

  private static final byte[] TRUE = "true".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] FALSE = "false".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] NULL = "null".getBytes(StandardCharsets.US_ASCII);

  private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
  private static final double[] POW10 = new double[23];

  static {
    double p = 1;
    for (int i = 0; i < POW10.length; i++) {
      POW10[i] = p;  // 10^i, exact as a double up to 10^22
      p *= 10;
    }
  }

  private final byte[] text;
  private final int end;
  private final Node root;
  private final boolean[] numeric;
  private final UTF8String[] found;
  private final int base;
  private final int whole;  // the slot of the whole line's canonical text (-1: not wanted)
  private boolean canonical = true;  // every value read so far (or since a container began) as sbpy writes it
  private int checking;  // > 0: inside a container whose text is wanted (its keys are checked)
  private int[] keyStack;  // while checking: (start, length) of the keys of the objects being read
  private int keyTop;
  private int pos;
  // the last number read: sign, integer digits, fraction digits (-1: none)
  private boolean numNegative;
  private int numIntStart;
  private int numIntDigits;
  private int numFracDigits;

  private JsonScan(byte[] text, int from, int to, Keys keys, UTF8String[] found, int base) {
    this.text = text;
    this.pos = from;
    this.end = to;
    this.root = keys.root;
    this.numeric = keys.numeric;
    this.found = found;
    this.base = base;
    this.whole = keys.whole;
    this.checking = whole >= 0 ? 1 : 0;
  }

  /** The wanted paths as a tree of {@link Node}s, and which of them are wanted as numbers. */
  static final class Keys {
    final Node root = new Node();
    final boolean[] numeric;
    int whole = -1;  // the slot of a {@code *} item: the whole line

    /**
     * A key spec: the paths joined by U+0001, each prefixed by {@code =} (as read) or {@code #} (and as a
     * number); a path is a top-level key, then for each step below it U+0002 and {@code .key} (a member of
     * an object) or {@code [i} (element {@code i >= 0} of an array): {@code =a} is {@code a},
     * {@code #a\u0002.b\u0002[0} is {@code a.b[0]}.
     */
    Keys(String spec) {
      String[] items = spec.isEmpty() ? new String[0] : spec.split("\u0001", -1);
      numeric = new boolean[items.length];
      for (int k = 0; k < items.length; k++) {
        char flag = items[k].isEmpty() ? '?' : items[k].charAt(0);
        if (items[k].equals("*")) {
          whole = k;
          continue;
        }
        if (flag != '=' && flag != '#') {
          throw new IllegalArgumentException("sbpy: bad key spec '" + spec + "'");
        }
        numeric[k] = flag == '#';
        String[] steps = items[k].substring(1).split("\u0002", -1);
        Node node = root.named(steps[0].getBytes(StandardCharsets.UTF_8));
        for (int i = 1; i < steps.length; i++) {
          String step = steps[i];
          if (step.startsWith(".")) {
            node = node.named(step.substring(1).getBytes(StandardCharsets.UTF_8));
          } else if (step.startsWith("[")) {
            node = node.indexed(Integer.parseInt(step.substring(1)));
          } else {
            throw new IllegalArgumentException("sbpy: bad key spec '" + spec + "'");
          }
        }
        node.slot = k;
      }
      root.collect();
    }

    int width() {
      return 3 * numeric.length;
    }
  }

  /** One step of the wanted paths: the slot of the path ending here (or -1) and the steps below it. */
  static final class Node {
    int slot = -1;
    byte[][] names = new byte[0][];
    Node[] byName = new Node[0];
    int[] indexes = new int[0];
    Node[] byIndex = new Node[0];
    int[] slots;  // every slot at or below this node (a value read again clears them: the last one wins)

    Node named(byte[] name) {
      for (int i = 0; i < names.length; i++) {
        if (java.util.Arrays.equals(names[i], name)) {
          return byName[i];
        }
      }
      names = java.util.Arrays.copyOf(names, names.length + 1);
      byName = java.util.Arrays.copyOf(byName, byName.length + 1);
      names[names.length - 1] = name;
      return byName[byName.length - 1] = new Node();
    }

    Node indexed(int index) {
      for (int i = 0; i < indexes.length; i++) {
        if (indexes[i] == index) {
          return byIndex[i];
        }
      }
      indexes = java.util.Arrays.copyOf(indexes, indexes.length + 1);
      byIndex = java.util.Arrays.copyOf(byIndex, byIndex.length + 1);
      indexes[indexes.length - 1] = index;
      return byIndex[byIndex.length - 1] = new Node();
    }

    boolean leaf() {
      return names.length == 0 && indexes.length == 0;
    }

    int[] collect() {
      int[] out = slot >= 0 ? new int[] {slot} : new int[0];
      for (Node c : byName) {
        out = concat(out, c.collect());
      }
      for (Node c : byIndex) {
        out = concat(out, c.collect());
      }
      return slots = out;
    }

    private static int[] concat(int[] a, int[] b) {
      int[] out = java.util.Arrays.copyOf(a, a.length + b.length);
      System.arraycopy(b, 0, out, a.length, b.length);
      return out;
    }
  }

  /** Scan {@code text[from, to)}; see the class comment. {@code found} must have room for the keys. */
  static boolean scan(byte[] text, int from, int to, Keys keys, UTF8String[] found, int base) {
    JsonScan scan = new JsonScan(text, from, to, keys, found, base);
    if (!scan.object()) {
      return false;
    }
    if (scan.whole >= 0) {
      int at = base + 3 * scan.whole;
      found[at] = CLASS_NAMES['x'];
      found[at + 1] = scan.canonical ? scan.compact(from, to) : null;  // (from, to): the line's value
      found[at + 2] = null;
    }
    return true;
  }

  /** The bytes {@code text[from, to)} of a value read without whitespace outside strings (strings hold no
   * escape: each quote opens or closes one); a view when there is none. */
  private UTF8String compact(int from, int to) {
    byte[] out = null;
    int n = 0;
    boolean inString = false;
    for (int i = from; i < to; i++) {
      byte c = text[i];
      if (c == '"') {
        inString = !inString;
      } else if (!inString && (c == ' ' || c == '\t' || c == '\r' || c == '\n')) {
        if (out == null) {
          out = new byte[to - from];
          n = i - from;
          System.arraycopy(text, from, out, 0, n);
        }
        continue;
      }
      if (out != null) {
        out[n++] = c;
      }
    }
    return out == null ? UTF8String.fromBytes(text, from, to - from) : UTF8String.fromBytes(out, 0, n);
  }

  /** While checking (the whole line, or a value whose text is wanted): note the key {@code text[from, to)}
   * of the object whose keys start at {@code mark} in the key stack — a repeated key or one starting with
   * {@code $} makes the value being read not canonical. */
  private void key(int mark, int from, int to) {
    if (checking == 0 || !canonical) {
      return;
    }
    int len = to - from;
    if (len > 0 && text[from] == '$') {
      canonical = false;
      return;
    }
    for (int k = mark; k < keyTop; k += 2) {
      if (keyStack[k + 1] == len && java.util.Arrays.equals(text, keyStack[k], keyStack[k] + len, text, from, to)) {
        canonical = false;
        return;
      }
    }
    if (keyTop - mark >= 128) {  // more than 64 keys in one object: not checked, refused
      canonical = false;
      return;
    }
    if (keyStack == null) {
      keyStack = new int[32];
    } else if (keyTop + 2 > keyStack.length) {
      keyStack = java.util.Arrays.copyOf(keyStack, keyStack.length * 2);
    }
    keyStack[keyTop++] = from;
    keyStack[keyTop++] = len;
  }

  /**
   * The number key of a double: 16 hex digits whose byte order is the numeric order of the doubles and
   * whose equality is theirs (-0.0 is 0.0), so Spark compares two numbers by comparing their keys. For
   * finite doubles only (JSON has no others).
   */
  static UTF8String numberKey(double v) {
    long bits = Double.doubleToLongBits(v == 0.0 ? 0.0 : v);
    bits = bits < 0 ? ~bits : bits ^ Long.MIN_VALUE;
    byte[] out = new byte[16];
    for (int i = 15; i >= 0; i--) {
      out[i] = HEX[(int) (bits & 15)];
      bits >>>= 4;
    }
    return UTF8String.fromBytes(out);
  }

  private void ws() {
    while (pos < end) {
      byte c = text[pos];
      if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
        return;
      }
      pos++;
    }
  }

  private boolean at(char c) {
    return pos < end && text[pos] == c;
  }

  /** The top-level object and nothing after it but whitespace. */
  private boolean object() {
    ws();
    if (!at('{')) {
      return false;
    }
    pos++;
    ws();
    if (at('}')) {
      pos++;
    } else {
      while (true) {
        int keyStart = pos;
        if (!string()) {
          return false;
        }
        key(0, keyStart + 1, pos - 1);
        Node node = child(root, keyStart + 1, pos - 1);
        ws();
        if (!at(':')) {
          return false;
        }
        pos++;
        ws();
        if (!member(node, 1)) {
          return false;
        }
        ws();
        if (pos >= end) {
          return false;
        }
        byte c = text[pos++];
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

  /** The node of the member whose key is {@code text[from, to)}, or null when no wanted path goes there. */
  private Node child(Node node, int from, int to) {
    if (node == null) {
      return null;
    }
    int len = to - from;
    byte[][] names = node.names;
    for (int k = 0; k < names.length; k++) {
      byte[] key = names[k];
      if (key.length == len && matches(from, key)) {
        return node.byName[k];
      }
    }
    return null;
  }

  private static Node element(Node node, int index) {
    if (node == null) {
      return null;
    }
    for (int k = 0; k < node.indexes.length; k++) {
      if (node.indexes[k] == index) {
        return node.byIndex[k];
      }
    }
    return null;
  }

  /**
   * The value at {@code pos} of a member or element whose wanted paths go through {@code node} (null: none):
   * every slot below it is cleared first (a repeated key's last value wins, as in Python), then the value is
   * read (descending into it for the paths below) and the node's own slot written. False: refused.
   */
  private boolean member(Node node, int depth) {
    if (node != null) {
      for (int s : node.slots) {
        int at = base + 3 * s;
        found[at] = found[at + 1] = found[at + 2] = null;
      }
    }
    int valueStart = pos;
    boolean wanted = node != null && node.slot >= 0;
    boolean before = canonical;
    canonical = true;
    if (wanted) {
      checking++;
    }
    byte cls = value(depth, node == null || node.leaf() ? null : node);
    if (wanted) {
      checking--;
    }
    boolean asRead = canonical;  // this value (a container: all of it) is written as sbpy writes it
    canonical = before && asRead;
    if (cls == 0) {
      return false;
    }
    if (wanted) {
      int slot = node.slot;
      int at = base + 3 * slot;
      found[at] = CLASS_NAMES[cls];
      boolean written = cls != 'd' && cls != 'x';
      found[at + 1] = written ? UTF8String.fromBytes(text, valueStart, pos - valueStart)
          : cls == 'x' && asRead ? compact(valueStart, pos) : null;
      found[at + 2] = numeric[slot] && (cls == 'i' || cls == 'f' || cls == 'd')
          ? numberKey(numberValue(valueStart)) : null;
    }
    return true;
  }

  private boolean matches(int from, byte[] word) {
    if (end - from < word.length) {
      return false;
    }
    for (int i = 0; i < word.length; i++) {
      if (text[from + i] != word[i]) {
        return false;
      }
    }
    return true;
  }

  /** A string at {@code pos} without escapes or control characters; false otherwise. */
  private boolean string() {
    if (!at('"')) {
      return false;
    }
    pos++;
    while (pos < end) {
      int c = text[pos++] & 0xff;
      if (c == '"') {
        return true;
      }
      if (c == '\\' || c < 0x20) {
        return false;
      }
    }
    return false;
  }

  /** One value at {@code pos}: its class, or 0 when the line is refused; {@code below}: the wanted paths
   * inside it (null: none). */
  private byte value(int depth, Node below) {
    if (pos >= end) {
      return 0;
    }
    byte c = text[pos];
    switch (c) {
      case '"':
        return string() ? (byte) 's' : 0;
      case 't':
        return word(TRUE) ? (byte) 'b' : 0;
      case 'f':
        return word(FALSE) ? (byte) 'b' : 0;
      case 'n':
        return word(NULL) ? (byte) 'n' : 0;
      case '[':
        return container(depth + 1, false, below) ? (byte) 'x' : 0;
      case '{':
        return container(depth + 1, true, below) ? (byte) 'x' : 0;
      default:
        return (c == '-' || (c >= '0' && c <= '9')) ? number() : 0;
    }
  }

  private boolean word(byte[] w) {
    if (matches(pos, w)) {
      pos += w.length;
      return true;
    }
    return false;
  }

  /** An array or a nested object at {@code pos}, nested at most 64 deep; {@code below}: the wanted paths
   * inside it (null: none). */
  private boolean container(int depth, boolean object, Node below) {
    if (depth > 64) {
      return false;
    }
    char close = object ? '}' : ']';
    pos++;
    ws();
    if (at(close)) {
      pos++;
      return true;
    }
    int mark = keyTop;
    for (int index = 0; ; index++) {
      ws();
      Node node = null;
      if (object) {
        int keyStart = pos;
        if (!string()) {
          return false;
        }
        key(mark, keyStart + 1, pos - 1);
        node = child(below, keyStart + 1, pos - 1);
        ws();
        if (!at(':')) {
          return false;
        }
        pos++;
        ws();
      } else {
        node = element(below, index);
      }
      if (!member(node, depth)) {
        return false;
      }
      ws();
      if (pos >= end) {
        return false;
      }
      byte c = text[pos++];
      if (c == close) {
        keyTop = mark;
        return true;
      }
      if (c != ',') {
        return false;
      }
    }
  }

  /**
   * The double of the number just read (starting at {@code start}), as Java's and Python's correctly
   * rounded parsers give it: with at most 15 digits in all and at most 22 after the point, the digits as a
   * long (below 2^53: exact) divided by 10^fraction (exact) — one IEEE division, so correctly rounded
   * (Clinger's fast path); otherwise {@code Double.parseDouble} of the text.
   */
  private double numberValue(int start) {
    int frac = Math.max(numFracDigits, 0);
    if (numIntDigits + frac <= 15) {
      long m = 0;
      for (int i = numIntStart; i < numIntStart + numIntDigits; i++) {
        m = m * 10 + (text[i] - '0');
      }
      for (int i = numIntStart + numIntDigits + 1; i < numIntStart + numIntDigits + 1 + frac; i++) {
        m = m * 10 + (text[i] - '0');
      }
      double v = frac == 0 ? (double) m : (double) m / POW10[frac];
      return numNegative ? -v : v;
    }
    return Double.parseDouble(new String(text, start, pos - start, StandardCharsets.US_ASCII));
  }

  /** {@code -?(0|[1-9][0-9]*)(\.[0-9]+)?}, classified; an exponent or 19+ digits refuse the line. */
  private byte number() {
    boolean negative = text[pos] == '-';
    if (negative) {
      pos++;
    }
    int intStart = pos;
    while (pos < end && isDigit(text[pos])) {
      pos++;
    }
    int intDigits = pos - intStart;
    if (intDigits == 0 || intDigits > 18 || (intDigits > 1 && text[intStart] == '0')) {
      return 0;
    }
    int fracDigits = -1;
    int fracStart = pos + 1;
    if (at('.')) {
      pos++;
      while (pos < end && isDigit(text[pos])) {
        pos++;
      }
      fracDigits = pos - fracStart;
      if (fracDigits == 0 || fracDigits > 18) {
        return 0;
      }
    }
    if (pos < end) {
      byte c = text[pos];
      if (c == 'e' || c == 'E' || c == '.' || isDigit(c)) {
        return 0;
      }
    }
    boolean zeroInt = intDigits == 1 && text[intStart] == '0';
    numNegative = negative;
    numIntStart = intStart;
    numIntDigits = intDigits;
    numFracDigits = fracDigits;
    if (fracDigits < 0) {
      if (negative && zeroInt) {  // -0 is the int 0, written "0"
        canonical = false;
        return 'x';
      }
      return intDigits > 15 ? (byte) 'x' : (byte) 'i';  // a longer int is written as read, but not exact
    }
    if (canonicalFloat(intDigits, zeroInt, fracStart, fracDigits)) {
      return 'f';
    }
    canonical = false;
    return 'd';
  }

  /** Whether sbpy writes the float of this decimal exactly as it is written here. */
  private boolean canonicalFloat(int intDigits, boolean zeroInt, int fracStart, int fracDigits) {
    if (intDigits + fracDigits > 15) {
      return false;
    }
    byte last = text[fracStart + fracDigits - 1];
    if (last == '0') {
      return fracDigits == 1;  // "7.0" is written "7.0"; "7.50" is written "7.5"
    }
    if (zeroInt) {  // below 1: at most four zeros after the point (1e-5 and up are written plainly)
      int zeros = 0;
      while (zeros < fracDigits && text[fracStart + zeros] == '0') {
        zeros++;
      }
      return zeros <= 4;
    }
    return true;
  }

  private static boolean isDigit(byte c) {
    return c >= '0' && c <= '9';
  }
}
