package org.foldcp.examples.plots;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.Color;
import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.tensor.PairTensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Heat maps, timing charts and the synthetic complex: the numbers behind the pictures, and real PNG files. */
class PlotsTest {
  @TempDir
  Path tmp;

  @Test
  void channelPoolsLargeTensorsAndKeepsSmallOnesExact() {
    PairTensor x = PairTensor.zeros(1, 4, 3);
    x.set(0, 1, 2, 1, 2.5f);
    float[][] v = PairHeatmaps.channel(x, 0, 1);
    assertEquals(4, v.length);
    assertEquals(2.5f, v[1][2]);
    assertEquals(0f, v[2][1]);

    PairTensor big = PairTensor.zeros(1, 300, 2);
    big.set(0, 0, 0, 0, 4f); // one of the 2 x 2 tokens of cell (0, 0)
    float[][] pooled = PairHeatmaps.channel(big, 0, 0);
    assertEquals(150, pooled.length);
    assertEquals(150, pooled[0].length);
    assertEquals(1f, pooled[0][0]);
    assertThrows(InvalidInputException.class, () -> PairHeatmaps.channel(x, 0, 3));
  }

  @Test
  void maskAndChangeMaps() {
    PairTensor x = PairTensor.zeros(1, 3, 2);
    x.setValid(0, 2, 0, false);
    float[][] m = PairHeatmaps.mask(x, 0);
    assertEquals(0f, m[2][0]);
    assertEquals(1f, m[0][0]);
    PairTensor y = x.copy();
    y.set(0, 1, 1, 0, 1f);
    y.set(0, 1, 1, 1, -3f);
    assertEquals(2f, PairHeatmaps.meanAbsChange(x, y, 0)[1][1]);
    assertEquals(0f, PairHeatmaps.meanAbsChange(x, y, 0)[0][0]);
  }

  @Test
  void colourScaleIsBlueWhiteRed() {
    PairHeatmaps.Diverging s = new PairHeatmaps.Diverging(-2, 2);
    assertEquals(PairHeatmaps.NEGATIVE, s.getPaint(-2));
    assertEquals(PairHeatmaps.NEGATIVE, s.getPaint(-9)); // clipped
    assertEquals(PairHeatmaps.ZERO, s.getPaint(0));
    assertEquals(PairHeatmaps.POSITIVE, s.getPaint(2));
    Color half = (Color) s.getPaint(1);
    assertTrue(half.getRed() > half.getBlue(), half.toString());
  }

  @Test
  void beforeAfterGridIsAPngWithEveryPanel() throws Exception {
    PairTensor x = SyntheticComplex.make(40, 8, 5, 3);
    PairTensor y = x.copy();
    y.set(0, 3, 4, 1, 9f);
    BufferedImage img = PairHeatmaps.beforeAfter(x, y, 0, new int[] {0, 1, 5}, "title");
    assertEquals(4 * 330, img.getWidth()); // 3 channels + the mask / the change map
    assertEquals(44 + 2 * 310, img.getHeight());
    Path png = Charts.writePng(img, tmp.resolve("sub/grid.png"));
    BufferedImage back = ImageIO.read(png.toFile());
    assertEquals(img.getWidth(), back.getWidth());
    assertTrue(colours(back) > 20, "a heat map has many colours");
  }

  @Test
  void layerTimesChart() throws Exception {
    BufferedImage img = Charts.layerTimes("t", "sub", List.of("1 outgoing", "2 incoming"), List.of("wall", "compute"),
        new double[][] {{10, 12}, {8, Double.NaN}});
    Path png = Charts.writePng(img, tmp.resolve("times.png"));
    assertTrue(Files.size(png) > 1000);
    assertThrows(InvalidInputException.class, () -> Charts.layerTimes("t", null, List.of("1"), List.of("a"),
        new double[][] {{1, 2}}));
  }

  @Test
  void syntheticComplexHasPaddingAndStructure() {
    PairTensor x = SyntheticComplex.make(30, 6, 4, 1);
    assertTrue(x.valid(0, 0, 25));
    assertTrue(!x.valid(0, 26, 0) && !x.valid(0, 0, 29));
    assertEquals(0f, x.get(0, 27, 3, 2));
    // distance channel 0 (centre 2 units) peaks on the diagonal (distance 0 is 2 sigma... still above far pairs)
    assertTrue(x.get(0, 5, 5, 0) > x.get(0, 0, 25, 0) - 1e-3f);
    // sequence-separation channel: cos(0) = 1 on the diagonal
    assertEquals(1f, x.get(0, 7, 7, 3));
    assertTrue(SyntheticComplex.make(30, 6, 4, 1).sameAs(x), "deterministic in the seed");
  }

  static int colours(BufferedImage img) {
    java.util.Set<Integer> seen = new java.util.HashSet<>();
    for (int y = 0; y < img.getHeight(); y += 3) {
      for (int x = 0; x < img.getWidth(); x += 3) {
        seen.add(img.getRGB(x, y));
      }
    }
    return seen.size();
  }
}
