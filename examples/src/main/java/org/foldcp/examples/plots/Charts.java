package org.foldcp.examples.plots;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.DecimalFormat;
import java.util.List;
import javax.imageio.ImageIO;
import org.foldcp.ops.InvalidInputException;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.CategoryAxis;
import org.jfree.chart.axis.CategoryLabelPositions;
import org.jfree.chart.labels.StandardCategoryItemLabelGenerator;
import org.jfree.chart.plot.CategoryPlot;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.plot.ValueMarker;
import org.jfree.chart.renderer.category.BarRenderer;
import org.jfree.chart.renderer.category.StandardBarPainter;
import org.jfree.chart.title.TextTitle;
import org.jfree.chart.ui.RectangleAnchor;
import org.jfree.chart.ui.TextAnchor;
import org.jfree.data.category.DefaultCategoryDataset;

/** Bar charts (per-layer timings, benchmark ratios) and writing images as PNG files. */
public final class Charts {
  static final Color[] SERIES = {
      new Color(31, 119, 180), new Color(255, 127, 14), new Color(44, 160, 44), new Color(214, 39, 40),
      new Color(148, 103, 189), new Color(140, 86, 75)};

  private Charts() {}

  /**
   * Per-layer times as grouped bars: one group per layer (its label, e.g. "1 outgoing"), one bar
   * per series (e.g. "Spark job wall time", "operator compute, summed over tasks"), in ms.
   *
   * @param seriesNames one name per row of {@code ms}
   * @param ms [series][layer] times in milliseconds; NaN leaves a bar out
   */
  public static BufferedImage layerTimes(String title, String subtitle, List<String> layerLabels, List<String> seriesNames,
      double[][] ms) {
    InvalidInputException.require(seriesNames.size() == ms.length, "series", seriesNames.size(),
        "must match the " + ms.length + " rows of times");
    DefaultCategoryDataset data = new DefaultCategoryDataset();
    for (int s = 0; s < ms.length; s++) {
      InvalidInputException.require(ms[s].length == layerLabels.size(), "times of series '" + seriesNames.get(s) + "'",
          ms[s].length, "must give one time per layer (" + layerLabels.size() + ")");
      for (int l = 0; l < layerLabels.size(); l++) {
        if (!Double.isNaN(ms[s][l])) {
          data.addValue(ms[s][l], seriesNames.get(s), layerLabels.get(l));
        }
      }
    }
    JFreeChart chart = ChartFactory.createBarChart(title, "layer", "time (ms)", data, PlotOrientation.VERTICAL,
        true, false, false);
    if (subtitle != null) {
      chart.addSubtitle(new TextTitle(subtitle, new Font(Font.SANS_SERIF, Font.PLAIN, 11)));
    }
    style(chart, "0");
    return PairHeatmaps.render(chart, Math.max(640, 120 + 110 * layerLabels.size()), 440);
  }

  /**
   * Ratios as grouped bars with a dashed line at 1: one group per category (a shape), one bar per
   * series (a direction). Values below 1 mean the first arm is faster.
   */
  public static BufferedImage ratios(String title, String subtitle, String yLabel, DefaultCategoryDataset data) {
    JFreeChart chart = ChartFactory.createBarChart(title, "shape (B, N, D)", yLabel, data, PlotOrientation.VERTICAL,
        true, false, false);
    if (subtitle != null) {
      chart.addSubtitle(new TextTitle(subtitle, new Font(Font.SANS_SERIF, Font.PLAIN, 11)));
    }
    style(chart, "0.00");
    CategoryPlot plot = chart.getCategoryPlot();
    ValueMarker parity = new ValueMarker(1.0, Color.DARK_GRAY,
        new BasicStroke(1.2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 1f, new float[] {6f, 4f}, 0f));
    parity.setLabel("1 = parity");
    parity.setLabelFont(new Font(Font.SANS_SERIF, Font.PLAIN, 10));
    parity.setLabelAnchor(RectangleAnchor.TOP_RIGHT);
    parity.setLabelTextAnchor(TextAnchor.BOTTOM_RIGHT);
    parity.setLabelBackgroundColor(Color.WHITE);
    plot.addRangeMarker(parity);
    double max = 1.0;
    for (int r = 0; r < data.getRowCount(); r++) {
      for (int c = 0; c < data.getColumnCount(); c++) {
        Number v = data.getValue(r, c);
        if (v != null) {
          max = Math.max(max, v.doubleValue());
        }
      }
    }
    plot.getRangeAxis().setRange(0, max * 1.15);
    int w = Math.max(640, 160 + 130 * data.getColumnCount());
    return PairHeatmaps.render(chart, w, 460);
  }

  private static void style(JFreeChart chart, String labelFormat) {
    chart.setBackgroundPaint(Color.WHITE);
    chart.getTitle().setFont(new Font(Font.SANS_SERIF, Font.BOLD, 15));
    CategoryPlot plot = chart.getCategoryPlot();
    plot.setBackgroundPaint(Color.WHITE);
    plot.setRangeGridlinePaint(new Color(210, 210, 210));
    plot.setOutlineVisible(false);
    BarRenderer r = (BarRenderer) plot.getRenderer();
    r.setBarPainter(new StandardBarPainter());
    r.setShadowVisible(false);
    r.setItemMargin(0.05);
    r.setMaximumBarWidth(0.12);
    for (int s = 0; s < SERIES.length; s++) {
      r.setSeriesPaint(s, SERIES[s]);
    }
    r.setDefaultItemLabelGenerator(new StandardCategoryItemLabelGenerator("{2}", new DecimalFormat(labelFormat)));
    r.setDefaultItemLabelsVisible(true);
    r.setDefaultItemLabelFont(new Font(Font.SANS_SERIF, Font.PLAIN, 10));
    CategoryAxis x = plot.getDomainAxis();
    x.setCategoryLabelPositions(CategoryLabelPositions.STANDARD);
    x.setMaximumCategoryLabelLines(2);
  }

  /** Writes {@code image} as a PNG file, creating the parent folders. */
  public static Path writePng(BufferedImage image, Path file) {
    try {
      Path parent = file.toAbsolutePath().getParent();
      if (parent != null) {
        Files.createDirectories(parent);
      }
      if (!ImageIO.write(image, "png", file.toFile())) {
        throw new IllegalStateException("no PNG writer in this JVM (javax.imageio)");
      }
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + file + ": " + e.getMessage(), e);
    }
  }
}
