package org.foldcp.spark.udf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.layer.Direction;
import org.junit.jupiter.api.Test;

class LayerRefTest {

  @Test
  void directionComesFromThePrefixAndResidualIsOn() {
    List<LayerRef> refs = LayerRef.parseList("pairformer.layers.0.tri_mul_out., pairformer.layers.0.TRI_MUL_IN.,blk.x");
    assertEquals(List.of(
        new LayerRef("pairformer.layers.0.tri_mul_out.", Direction.OUTGOING, true),
        new LayerRef("pairformer.layers.0.TRI_MUL_IN.", Direction.INCOMING, true),
        new LayerRef("blk.x", Direction.OUTGOING, true)), refs);
  }

  @Test
  void optionsOverrideThePrefix() {
    List<LayerRef> refs = LayerRef.parseList("m.tri_mul_out.:in , m.tri_mul_in.:Outgoing:noresidual, m.c:incoming:residual");
    assertEquals(List.of(
        new LayerRef("m.tri_mul_out.", Direction.INCOMING, true),
        new LayerRef("m.tri_mul_in.", Direction.OUTGOING, false),
        new LayerRef("m.c", Direction.INCOMING, true)), refs);
  }

  @Test
  void toStringSpellsOutEveryOptionAndParsesBack() {
    List<LayerRef> refs = LayerRef.parseList("a.tri_mul_in.:noresidual,b");
    assertEquals("a.tri_mul_in.:in:noresidual", refs.get(0).toString());
    assertEquals("b:out", refs.get(1).toString());
    assertEquals(refs, LayerRef.parseList(refs.get(0) + "," + refs.get(1)));
  }

  @Test
  void badListsNameTheEntryAndTheRule() {
    assertMessage("layers = null: must list at least one weight key prefix", null);
    assertMessage("layers = '  ': must list at least one weight key prefix", "  ");
    assertMessage("entry 1 of layers 'a,,b' = '': every comma-separated entry must name a weight key prefix", "a,,b");
    assertMessage("entry 1 of layers 'a,' = ''", "a,");
    assertMessage("entry 0 of layers ':in' = ':in': must start with a weight key prefix", ":in");
    assertMessage("option ':sideways' of entry 0 of layers 'a:sideways' = 'a:sideways': options after the prefix"
        + " must be among in, incoming, out, outgoing, residual, noresidual", "a:sideways");
    assertMessage("entry 0 of layers 'a:in:out' = 'a:in:out': gives both directions", "a:in:out");
    assertMessage("gives both :residual and :noresidual", "a:residual:noresidual");
  }

  private static void assertMessage(String expected, String layers) {
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> LayerRef.parseList(layers));
    assertTrue(e.getMessage().contains(expected), e.getMessage());
  }
}
