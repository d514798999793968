package org.foldcp.ops.gpu.feed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The burst summary's arithmetic over hand-made spans (the events that make real spans need a
 * GPU: StackFeedGpuTest): a feed that runs one complex at a time, one that keeps upload, kernels
 * and download of three complexes busy at once, and one that leaves the GPU idle between steps.
 */
class FeedTimelineTest {
  private static final double EPS = 1e-9;

  @Test
  void oneComplexAtATimeShowsCopiesAloneForTwoThirdsOfTheWall() {
    List<FeedTimeline.Span> spans = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      double t = 3 * i;
      spans.add(new FeedTimeline.Span(t, t + 1, t + 1, t + 2, t + 2, t + 3));
    }
    FeedTimeline.Summary s = FeedTimeline.summarize(spans);
    assertEquals(4, s.complexes());
    assertEquals(12, s.wallMs(), EPS);
    assertEquals(4, s.kernelsMs(), EPS);
    assertEquals(4, s.uploadsMs(), EPS);
    assertEquals(4, s.downloadsMs(), EPS);
    assertEquals(8, s.copiesAloneMs(), EPS);
    assertEquals(0, s.idleMs(), EPS);
    assertEquals(1, s.meanUploadMs(), EPS);
    assertEquals(0, s.meanQueueMs(), EPS);
    assertEquals(1, s.meanKernelsMs(), EPS);
    assertEquals(0, s.meanDrainLagMs(), EPS);
    assertEquals(1, s.meanDownloadMs(), EPS);
    assertTrue(s.describe().contains("kernels busy 33%"), s.describe());
    assertTrue(s.describe().contains("copies with no kernel running 67%"), s.describe());
  }

  @Test
  void aFullPipelineKeepsTheKernelsBusyBetweenItsFillAndDrain() {
    List<FeedTimeline.Span> spans = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      spans.add(new FeedTimeline.Span(i, i + 1, i + 1, i + 2, i + 2, i + 3));
    }
    FeedTimeline.Summary s = FeedTimeline.summarize(spans);
    assertEquals(6, s.wallMs(), EPS);
    assertEquals(4, s.kernelsMs(), EPS);   // [1, 5]
    assertEquals(4, s.uploadsMs(), EPS);   // [0, 4]
    assertEquals(4, s.downloadsMs(), EPS); // [2, 6]
    assertEquals(2, s.copiesAloneMs(), EPS); // the first upload and the last download
    assertEquals(0, s.idleMs(), EPS);
  }

  @Test
  void waitsBetweenStepsAreIdleTimeAndShowInTheMeans() {
    FeedTimeline.Summary s = FeedTimeline.summarize(List.of(new FeedTimeline.Span(0, 1, 2, 3, 4.5, 5)));
    assertEquals(5, s.wallMs(), EPS);
    assertEquals(1, s.kernelsMs(), EPS);
    assertEquals(1.5, s.copiesAloneMs(), EPS);
    assertEquals(2.5, s.idleMs(), EPS);
    assertEquals(1, s.meanQueueMs(), EPS);
    assertEquals(1.5, s.meanDrainLagMs(), EPS);
    assertEquals(0.5, s.meanDownloadMs(), EPS);
  }

  @Test
  void overlappingIntervalsOfOneKindCountOnce() {
    // two uploads at once (two slots), then both complexes' kernels back to back
    FeedTimeline.Summary s = FeedTimeline.summarize(List.of(
        new FeedTimeline.Span(0, 2, 2, 3, 3, 4),
        new FeedTimeline.Span(0, 2, 3, 4, 4, 5)));
    assertEquals(5, s.wallMs(), EPS);
    assertEquals(2, s.uploadsMs(), EPS);
    assertEquals(2, s.kernelsMs(), EPS);
    assertEquals(2, s.downloadsMs(), EPS);
    assertEquals(3, s.copiesAloneMs(), EPS); // [0, 2] and [4, 5]
  }

  @Test
  void noSpansIsAnError() {
    assertThrows(IllegalArgumentException.class, () -> FeedTimeline.summarize(List.of()));
  }
}
