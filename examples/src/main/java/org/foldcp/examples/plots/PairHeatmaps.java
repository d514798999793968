package org.foldcp.examples.plots;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.geom.Rectangle2D;
import java.awt.image.BufferedImage;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.tensor.PairTensor;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.AxisLocation;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.LookupPaintScale;
import org.jfree.chart.renderer.PaintScale;
import org.jfree.chart.renderer.xy.XYBlockRenderer;
import org.jfree.chart.title.PaintScaleLegend;
import org.jfree.chart.ui.RectangleEdge;
import org.jfree.chart.ui.RectangleInsets;
import org.jfree.data.xy.DefaultXYZDataset;

/**
 * Heat maps of a pair representation: one channel c of a (B, N, N, D) pair tensor as an N x N
 * image (rows i down, columns j across, as the tensor is indexed), the pair mask, and a grid of
 * channels before and after a layer stack. Large N is mean-pooled to at most
 * {@link #MAX_CELLS} cells per axis. Channel values use a diverging blue-white-red scale centred
 * on 0 and clipped at the 99th percentile of |value|, so one outlier does not wash out the map.
 */
public final class PairHeatmaps {
  /** Cells per axis at most; larger N is mean-pooled into blocks. */
  public static final int MAX_CELLS = 256;

  static final Color NEGATIVE = new Color(33, 102, 172);
  static final Color ZERO = new Color(247, 247, 247);
  static final Color POSITIVE = new Color(178, 24, 43);
  static final Color VALID = new Color(120, 180, 120);
  static final Color MASKED = new Color(40, 40, 40);

  private static final int PANEL_W = 330;
  private static final int PANEL_H = 310;
  private static final int TITLE_H = 44;

  private PairHeatmaps() {}

  /** Values of channel {@code c} of batch element {@code b}, mean-pooled to at most MAX_CELLS per axis: [row][col]. */
  public static float[][] channel(PairTensor x, int b, int c) {
    InvalidInputException.require(c >= 0 && c < x.dim(), "channel", c, "must lie in [0, " + x.dim() + ") for D = " + x.dim());
    InvalidInputException.require(b >= 0 && b < x.batch(), "batch index", b, "must lie in [0, " + x.batch() + ")");
    return pooled(x.rows(), x.cols(), (i, j) -> x.get(b, i, j, c));
  }

  /** The pair mask of batch element {@code b} as the fraction of valid positions per cell (1 = valid). */
  public static float[][] mask(PairTensor x, int b) {
    return pooled(x.rows(), x.cols(), (i, j) -> x.valid(b, i, j) ? 1f : 0f);
  }

  /** Mean over all channels of |after - before| per position (what the stack changed), pooled like {@link #channel}. */
  public static float[][] meanAbsChange(PairTensor before, PairTensor after, int b) {
    InvalidInputException.require(before.rows() == after.rows() && before.cols() == after.cols()
        && before.dim() == after.dim(), "shapes", before.shapeString() + " vs " + after.shapeString(), "must be equal");
    int d = before.dim();
    return pooled(before.rows(), before.cols(), (i, j) -> {
      double s = 0;
      for (int c = 0; c < d; c++) {
        s += Math.abs(after.get(b, i, j, c) - before.get(b, i, j, c));
      }
      return (float) (s / d);
    });
  }

  /** A value per position (i, j) of a pair grid. */
  @FunctionalInterface
  private interface PositionValue {
    float at(int i, int j);
  }

  /** {@code value} over a rows x cols grid, mean-pooled to at most MAX_CELLS cells per axis: [row][col]. */
  private static float[][] pooled(int rows, int cols, PositionValue value) {
    int pr = pool(rows);
    int pc = pool(cols);
    int outR = (rows + pr - 1) / pr;
    int outC = (cols + pc - 1) / pc;
    float[][] sum = new float[outR][outC];
    int[][] count = new int[outR][outC];
    for (int i = 0; i < rows; i++) {
      for (int j = 0; j < cols; j++) {
        sum[i / pr][j / pc] += value.at(i, j);
        count[i / pr][j / pc]++;
      }
    }
    for (int i = 0; i < outR; i++) {
      for (int j = 0; j < outC; j++) {
        sum[i][j] /= count[i][j];
      }
    }
    return sum;
  }

  /** The pair mask as a chart image (green valid, black masked). */
  public static BufferedImage maskImage(PairTensor x, int b, String title) {
    return render(maskChart(mask(x, b), title, x.rows(), x.cols()), PANEL_W, PANEL_H);
  }

  /** Channels {@code channels} of batch element {@code b} side by side, each with its own colour scale. */
  public static BufferedImage channels(PairTensor x, int b, int[] channels, String title) {
    InvalidInputException.require(channels.length >= 1, "channels", Arrays.toString(channels), "name at least one channel");
    List<JFreeChart> row = new ArrayList<>();
    for (int c : channels) {
      row.add(channelChart(channel(x, b, c), "channel " + c, x.rows(), x.cols()));
    }
    return grid(title, List.of(row));
  }

  /**
   * A grid of heat maps: the first row channels {@code channels} of {@code before} and the pair
   * mask, the second row the same channels of {@code after} and the mean |after - before| over
   * all D channels. Each channel's before and after panels share one colour scale.
   */
  public static BufferedImage beforeAfter(PairTensor before, PairTensor after, int b, int[] channels, String title) {
    InvalidInputException.require(channels.length >= 1, "channels", Arrays.toString(channels), "name at least one channel");
    int n = before.rows();
    List<JFreeChart> top = new ArrayList<>();
    List<JFreeChart> bottom = new ArrayList<>();
    for (int c : channels) {
      float[][] v0 = channel(before, b, c);
      float[][] v1 = channel(after, b, c);
      double lim = Math.max(robustMax(v0), robustMax(v1));
      top.add(channelChart(v0, "before: channel " + c, lim, n, before.cols()));
      bottom.add(channelChart(v1, "after: channel " + c, lim, n, before.cols()));
    }
    top.add(maskChart(mask(before, b), "pair mask (1 = valid)", n, before.cols()));
    float[][] change = meanAbsChange(before, after, b);
    bottom.add(sequentialChart(change, "mean |after - before|, all " + before.dim() + " channels", n, before.cols()));
    return grid(title, List.of(top, bottom));
  }

  /** Charts laid out in rows under one title, as one image. */
  static BufferedImage grid(String title, List<List<JFreeChart>> rows) {
    int cols = 0;
    for (List<JFreeChart> r : rows) {
      cols = Math.max(cols, r.size());
    }
    int w = cols * PANEL_W;
    int h = TITLE_H + rows.size() * PANEL_H;
    BufferedImage img = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = img.createGraphics();
    try {
      g.setColor(Color.WHITE);
      g.fillRect(0, 0, w, h);
      g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
      g.setColor(Color.BLACK);
      g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 17));
      int tw = g.getFontMetrics().stringWidth(title);
      g.drawString(title, Math.max(8, (w - tw) / 2), 28);
      for (int r = 0; r < rows.size(); r++) {
        for (int c = 0; c < rows.get(r).size(); c++) {
          rows.get(r).get(c).draw(g, new Rectangle2D.Double(c * PANEL_W, TITLE_H + r * PANEL_H, PANEL_W, PANEL_H));
        }
      }
    } finally {
      g.dispose();
    }
    return img;
  }

  static BufferedImage render(JFreeChart chart, int w, int h) {
    BufferedImage img = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = img.createGraphics();
    try {
      g.setColor(Color.WHITE);
      g.fillRect(0, 0, w, h);
      chart.draw(g, new Rectangle2D.Double(0, 0, w, h));
    } finally {
      g.dispose();
    }
    return img;
  }

  static JFreeChart channelChart(float[][] v, String title, int n, int cols) {
    return channelChart(v, title, robustMax(v), n, cols);
  }

  static JFreeChart channelChart(float[][] v, String title, double lim, int n, int cols) {
    double l = lim > 0 ? lim : 1;
    return chart(v, title, new Diverging(-l, l), n, cols, String.format(Locale.ROOT, "value (clipped at +-%.2g)", l));
  }

  static JFreeChart sequentialChart(float[][] v, String title, int n, int cols) {
    double lo = percentile(v, 0.01);
    double hi = percentile(v, 0.99);
    return chart(v, title, new Sequential(lo, hi > lo ? hi : lo + 1), n, cols, "mean |change|");
  }

  static JFreeChart maskChart(float[][] v, String title, int n, int cols) {
    LookupPaintScale scale = new LookupPaintScale(0, 1.0001, MASKED);
    scale.add(0.5, VALID);
    return chart(v, title, scale, n, cols, "0 masked / 1 valid");
  }

  private static JFreeChart chart(float[][] v, String title, PaintScale scale, int n, int cols, String legend) {
    int rows = v.length;
    int cw = v[0].length;
    double sy = (double) n / rows; // tokens per cell
    double sx = (double) cols / cw;
    double[] xs = new double[rows * cw];
    double[] ys = new double[rows * cw];
    double[] zs = new double[rows * cw];
    int q = 0;
    for (int i = 0; i < rows; i++) {
      for (int j = 0; j < cw; j++) {
        xs[q] = j * sx;
        ys[q] = i * sy;
        zs[q] = v[i][j];
        q++;
      }
    }
    DefaultXYZDataset data = new DefaultXYZDataset();
    data.addSeries("pair", new double[][] {xs, ys, zs});
    XYBlockRenderer r = new XYBlockRenderer();
    r.setBlockWidth(sx);
    r.setBlockHeight(sy);
    r.setBlockAnchor(org.jfree.chart.ui.RectangleAnchor.BOTTOM_LEFT);
    r.setPaintScale(scale);
    NumberAxis xAxis = new NumberAxis("token j");
    xAxis.setRange(0, cols);
    xAxis.setStandardTickUnits(NumberAxis.createIntegerTickUnits());
    NumberAxis yAxis = new NumberAxis("token i");
    yAxis.setRange(0, n);
    yAxis.setInverted(true); // row 0 at the top, as a matrix is printed
    yAxis.setStandardTickUnits(NumberAxis.createIntegerTickUnits());
    XYPlot plot = new XYPlot(data, xAxis, yAxis, r);
    plot.setBackgroundPaint(Color.WHITE);
    plot.setDomainGridlinesVisible(false);
    plot.setRangeGridlinesVisible(false);
    plot.setAxisOffset(RectangleInsets.ZERO_INSETS);
    plot.setOutlineStroke(new BasicStroke(0.5f));
    JFreeChart chart = new JFreeChart(title, new Font(Font.SANS_SERIF, Font.PLAIN, 13), plot, false);
    chart.setBackgroundPaint(Color.WHITE);
    chart.setAntiAlias(false); // crisp cell edges; text stays anti-aliased
    chart.setTextAntiAlias(true);
    NumberAxis legendAxis = new NumberAxis(legend);
    legendAxis.setRange(scale.getLowerBound(), scale.getUpperBound());
    legendAxis.setTickLabelFont(new Font(Font.SANS_SERIF, Font.PLAIN, 9));
    legendAxis.setLabelFont(new Font(Font.SANS_SERIF, Font.PLAIN, 10));
    PaintScaleLegend ps = new PaintScaleLegend(scale, legendAxis);
    ps.setPosition(RectangleEdge.RIGHT);
    ps.setAxisLocation(AxisLocation.TOP_OR_RIGHT);
    ps.setMargin(new RectangleInsets(4, 4, 4, 4));
    ps.setStripWidth(10);
    ps.setBackgroundPaint(Color.WHITE);
    chart.addSubtitle(ps);
    chart.getTitle().setPadding(2, 2, 2, 2);
    return chart;
  }

  /** The 99th percentile of |v| (the colour limit), or 0 when every value is 0. */
  static double robustMax(float[][] v) {
    float[][] abs = new float[v.length][];
    for (int i = 0; i < v.length; i++) {
      abs[i] = new float[v[i].length];
      for (int j = 0; j < v[i].length; j++) {
        abs[i][j] = Math.abs(v[i][j]);
      }
    }
    return percentile(abs, 0.99);
  }

  /** The p-quantile of the finite values of v (non-finite ones count as 0). */
  static double percentile(float[][] v, double p) {
    int total = 0;
    for (float[] r : v) {
      total += r.length;
    }
    float[] a = new float[total];
    int q = 0;
    for (float[] r : v) {
      for (float x : r) {
        a[q++] = Float.isFinite(x) ? x : 0f;
      }
    }
    Arrays.sort(a);
    return a[Math.max(0, Math.min(a.length - 1, (int) Math.floor(p * (a.length - 1))))];
  }

  private static int pool(int n) {
    return (n + MAX_CELLS - 1) / MAX_CELLS;
  }

  /** A colour scale over [lo, hi]; subclasses say which colour a value gets. */
  abstract static class Bounded implements PaintScale {
    final double lo;
    final double hi;

    Bounded(double lo, double hi) {
      this.lo = lo;
      this.hi = hi;
    }

    @Override
    public double getLowerBound() { return lo; }

    @Override
    public double getUpperBound() { return hi; }
  }

  /** Blue below 0, white at 0, red above; clipped at the bounds. */
  static final class Diverging extends Bounded {
    Diverging(double lo, double hi) {
      super(lo, hi);
    }

    @Override
    public java.awt.Paint getPaint(double value) {
      if (Double.isNaN(value)) {
        return Color.MAGENTA;
      }
      double t = Math.max(lo, Math.min(hi, value));
      return t < 0 ? mix(ZERO, NEGATIVE, t / lo) : mix(ZERO, POSITIVE, t / hi);
    }
  }

  /** White at the lower bound to dark red at the upper one. */
  static final class Sequential extends Bounded {
    Sequential(double lo, double hi) {
      super(lo, hi);
    }

    @Override
    public java.awt.Paint getPaint(double value) {
      double t = Double.isNaN(value) ? 0 : (Math.max(lo, Math.min(hi, value)) - lo) / (hi - lo);
      return t < 0.5 ? mix(ZERO, new Color(244, 165, 130), t * 2) : mix(new Color(244, 165, 130), new Color(103, 0, 13), t * 2 - 1);
    }
  }

  static Color mix(Color a, Color b, double t) {
    double u = Math.max(0, Math.min(1, t));
    return new Color(
        (int) Math.round(a.getRed() + (b.getRed() - a.getRed()) * u),
        (int) Math.round(a.getGreen() + (b.getGreen() - a.getGreen()) * u),
        (int) Math.round(a.getBlue() + (b.getBlue() - a.getBlue()) * u));
  }
}
