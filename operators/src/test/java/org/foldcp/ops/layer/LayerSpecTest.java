package org.foldcp.ops.layer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.foldcp.ops.InvalidInputException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class LayerSpecTest {

  static InvalidInputException assertRejected(Executable call, String... parts) {
    InvalidInputException e = assertThrows(InvalidInputException.class, call);
    String msg = e.getMessage();
    for (String p : parts) {
      assertTrue(msg.contains(p), "message \"" + msg + "\" should contain \"" + p + "\"");
    }
    return e;
  }

  private static TriMulLayer layer(Direction dir, int d, long seed) {
    return new TriMulLayer(TriMulSpec.of(dir, true), LayerWeights.random(d, seed, false));
  }

  // ---------------------------------------------------------------- Direction

  @ParameterizedTest(name = "\"{0}\" -> OUTGOING")
  @ValueSource(strings = {"outgoing", "out", "tri_mul_out", "OUTGOING", "Out", " tri_mul_out ", "TRI_MUL_OUT"})
  void parsesOutgoing(String s) {
    assertSame(Direction.OUTGOING, Direction.parse(s));
  }

  @ParameterizedTest(name = "\"{0}\" -> INCOMING")
  @ValueSource(strings = {"incoming", "in", "tri_mul_in", "INCOMING", "In", "\tincoming\n", "Tri_Mul_In"})
  void parsesIncoming(String s) {
    assertSame(Direction.INCOMING, Direction.parse(s));
  }

  @Test
  void rejectsAnUnknownDirection() {
    assertRejected(() -> Direction.parse("sideways"),
        "direction = 'sideways'", "outgoing (out, tri_mul_out)", "incoming (in, tri_mul_in)");
  }

  @ParameterizedTest(name = "rejects \"{0}\"")
  @ValueSource(strings = {"", "   ", "outgoingg", "tri_mul", "o", "inc", "tri-mul-out", "out going"})
  void rejectsNearMisses(String s) {
    assertRejected(() -> Direction.parse(s), "direction = '" + s + "'", "must be one of outgoing");
  }

  @Test
  void rejectsNull() {
    assertRejected(() -> Direction.parse(null), "direction = 'null'", "must be one of outgoing");
  }

  @Test
  void labelsParseBack() {
    assertEquals("outgoing", Direction.OUTGOING.label());
    assertEquals("incoming", Direction.INCOMING.label());
    for (Direction d : Direction.values()) {
      assertSame(d, Direction.parse(d.label()));
      assertSame(d, Direction.parse(d.name()));
    }
  }

  // ---------------------------------------------------------------- TriMulSpec

  @Test
  void specDefaults() {
    TriMulSpec s = TriMulSpec.of(Direction.INCOMING);
    assertSame(Direction.INCOMING, s.direction());
    assertFalse(s.residual());
    assertEquals(1e-5f, s.eps());
    assertEquals(TriMulSpec.DEFAULT_EPS, s.eps());
    TriMulSpec r = TriMulSpec.of(Direction.OUTGOING, true);
    assertTrue(r.residual());
    assertEquals(TriMulSpec.DEFAULT_EPS, r.eps());
    assertEquals("outgoing+residual eps=1.0E-5", r.toString());
    assertEquals("incoming eps=1.0E-5", s.toString());
  }

  @ParameterizedTest(name = "eps = {0}")
  @ValueSource(floats = {0f, -0f, -1e-5f, -1f, Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY})
  void specRejectsBadEps(float eps) {
    assertRejected(() -> new TriMulSpec(Direction.OUTGOING, false, eps),
        "eps = " + eps + ":", "the LayerNorm epsilon must be a finite number > 0");
  }

  @Test
  void specRejectsBadEpsNamingTheValue() {
    assertRejected(() -> new TriMulSpec(Direction.OUTGOING, true, 0f), "eps = 0.0", "finite number > 0");
    assertRejected(() -> new TriMulSpec(Direction.OUTGOING, true, -3f), "eps = -3.0", "finite number > 0");
    assertRejected(() -> new TriMulSpec(Direction.OUTGOING, true, Float.NaN), "eps = NaN", "finite number > 0");
    assertRejected(() -> new TriMulSpec(Direction.OUTGOING, true, Float.POSITIVE_INFINITY),
        "eps = Infinity", "finite number > 0");
  }

  @Test
  void specAcceptsTinyAndLargeEps() {
    assertEquals(Float.MIN_VALUE, new TriMulSpec(Direction.INCOMING, false, Float.MIN_VALUE).eps());
    assertEquals(Float.MAX_VALUE, new TriMulSpec(Direction.INCOMING, false, Float.MAX_VALUE).eps());
  }

  @Test
  void specRejectsANullDirection() {
    assertThrows(NullPointerException.class, () -> new TriMulSpec(null, false, 1e-5f));
  }

  @Test
  void specEqualsAndHashCode() {
    TriMulSpec a = new TriMulSpec(Direction.OUTGOING, true, 1e-5f);
    TriMulSpec b = new TriMulSpec(Direction.OUTGOING, true, 1e-5f);
    assertEquals(a, a);
    assertEquals(a, b);
    assertEquals(b, a);
    assertEquals(a.hashCode(), b.hashCode());
    assertEquals(a, TriMulSpec.of(Direction.OUTGOING, true));
    assertNotEquals(a, new TriMulSpec(Direction.INCOMING, true, 1e-5f));
    assertNotEquals(a, new TriMulSpec(Direction.OUTGOING, false, 1e-5f));
    assertNotEquals(a, new TriMulSpec(Direction.OUTGOING, true, 1e-6f));
    assertNotEquals(a, new TriMulSpec(Direction.OUTGOING, true, Math.nextUp(1e-5f)));
    assertNotEquals(a, null);
    assertNotEquals(a, "outgoing+residual eps=1.0E-5");
    Set<TriMulSpec> set = new HashSet<>();
    for (Direction d : Direction.values()) {
      for (boolean r : new boolean[] {false, true}) {
        set.add(new TriMulSpec(d, r, 1e-5f));
        set.add(new TriMulSpec(d, r, 1e-5f));
        set.add(new TriMulSpec(d, r, 1e-3f));
      }
    }
    assertEquals(8, set.size());
  }

  // ---------------------------------------------------------------- TriMulLayer

  @Test
  void layerDelegates() {
    LayerWeights w = LayerWeights.random(8, 1, false);
    TriMulSpec s = TriMulSpec.of(Direction.INCOMING);
    TriMulLayer l = new TriMulLayer(s, w);
    assertSame(s, l.spec());
    assertSame(w, l.weights());
    assertSame(Direction.INCOMING, l.direction());
    assertEquals(8, l.dim());
    assertTrue(l.toString().contains("incoming"));
    assertThrows(NullPointerException.class, () -> new TriMulLayer(null, w));
    assertThrows(NullPointerException.class, () -> new TriMulLayer(s, null));
  }

  // ---------------------------------------------------------------- LayerStack

  @Test
  void stackRejectsAnEmptyList() {
    assertRejected(() -> new LayerStack(List.of()), "layer count = 0", "at least one layer");
    assertRejected(() -> new LayerStack(null), "layer count = null", "at least one layer");
    assertRejected(LayerStack::of, "layer count = 0", "at least one layer");
    assertRejected(() -> LayerStack.randomAlternating(0, 8, 1, false), "layer count = 0", "at least one layer");
  }

  @Test
  void stackRejectsMixedD() {
    assertRejected(() -> LayerStack.of(layer(Direction.OUTGOING, 16, 1), layer(Direction.INCOMING, 32, 2)),
        "D of layer 1 = 32", "(16)", "every layer of a stack must have the D of layer 0");
    assertRejected(() -> LayerStack.of(layer(Direction.OUTGOING, 16, 1), layer(Direction.INCOMING, 16, 2),
            layer(Direction.OUTGOING, 8, 3)),
        "D of layer 2 = 8", "(16)");
  }

  @Test
  void stackKeepsOrderAndIsUnmodifiable() {
    TriMulLayer a = layer(Direction.OUTGOING, 4, 1);
    TriMulLayer b = layer(Direction.INCOMING, 4, 2);
    List<TriMulLayer> src = new ArrayList<>(List.of(a, b));
    LayerStack s = new LayerStack(src);
    src.add(a);
    assertEquals(2, s.size(), "the stack copies its list");
    assertSame(a, s.get(0));
    assertSame(b, s.get(1));
    assertEquals(List.of(a, b), s.layers());
    assertEquals(4, s.dim());
    assertThrows(UnsupportedOperationException.class, () -> s.layers().add(a));
    assertEquals(1, LayerStack.of(a).size());
  }

  @Test
  void randomAlternatingAlternatesWithResidual() {
    LayerStack s = LayerStack.randomAlternating(5, 8, 3, false);
    assertEquals(5, s.size());
    assertEquals(8, s.dim());
    Set<String> digests = new HashSet<>();
    for (int l = 0; l < 5; l++) {
      TriMulLayer layer = s.get(l);
      assertEquals(l % 2 == 0 ? Direction.OUTGOING : Direction.INCOMING, layer.direction(), "layer " + l);
      assertTrue(layer.spec().residual(), "layer " + l);
      assertEquals(TriMulSpec.DEFAULT_EPS, layer.spec().eps());
      assertEquals(8, layer.dim());
      assertFalse(layer.weights().has(LayerWeights.P_IN_B));
      digests.add(layer.weights().digest());
    }
    assertEquals(5, digests.size(), "each layer has its own weights");
    assertTrue(LayerStack.randomAlternating(2, 8, 3, true).get(1).weights().has(LayerWeights.G_OUT_B));
  }

  @Test
  void randomAlternatingIsDeterministicInSeed() {
    LayerStack a = LayerStack.randomAlternating(4, 8, 42, true);
    LayerStack b = LayerStack.randomAlternating(4, 8, 42, true);
    LayerStack c = LayerStack.randomAlternating(4, 8, 43, true);
    for (int l = 0; l < 4; l++) {
      assertEquals(a.get(l).weights().digest(), b.get(l).weights().digest());
      assertEquals(a.get(l).spec(), b.get(l).spec());
      assertNotEquals(a.get(l).weights().digest(), c.get(l).weights().digest());
    }
    // a shorter stack is a prefix of a longer one with the same seed
    assertEquals(a.get(1).weights().digest(), LayerStack.randomAlternating(2, 8, 42, true).get(1).weights().digest());
  }

  @Test
  void stackSerializes() throws Exception {
    LayerStack s = LayerStack.randomAlternating(3, 4, 9, true);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(s);
    }
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      LayerStack back = (LayerStack) in.readObject();
      assertEquals(3, back.size());
      for (int l = 0; l < 3; l++) {
        assertEquals(s.get(l).spec(), back.get(l).spec());
        assertEquals(s.get(l).weights().digest(), back.get(l).weights().digest());
      }
    }
  }
}
