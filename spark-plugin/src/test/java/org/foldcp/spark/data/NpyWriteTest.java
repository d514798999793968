package org.foldcp.spark.data;

import org.foldcp.ops.InvalidInputException;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.foldcp.ops.io.Npy;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.sql.FoldCp;
import org.foldcp.spark.sql.FoldCpOptions;
import org.foldcp.spark.tiles.RowBands;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.Test;
import scala.Tuple2;

/** Output per complex through Spark's commit protocol: whole files only, and a retry writes them afresh. */
class NpyWriteTest extends DataSession {
  /** Where a failing attempt saw its half-written file; the task closures run in this JVM (local mode). */
  private static final List<Path> PARTIAL = new ArrayList<>();
  private static final AtomicInteger FAILURES = new AtomicInteger();

  /**
   * Outputs that cannot be written fail before the tiles are computed (the tiles here fail
   * loudly if computed), naming the path and the rule: a directory that exists, a file in a
   * missing folder, a folder as the file.
   */
  @Test
  void outputsThatCannotBeWrittenFailBeforeAnyWork() throws IOException {
    Dataset<Row> poisoned = spark.range(1).selectExpr("raise_error('the tiles were computed') AS complex_id");
    Path existing = Files.createDirectory(dir.resolve("there"));
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> FoldCpData.writeNpyDirectory(poisoned, DataSession.uri(existing)));
    assertTrue(e.getMessage().contains("exists already: name a new directory"), e.getMessage());
    Path missing = dir.resolve("no/such/out.npy");
    e = assertThrows(InvalidInputException.class, () -> FoldCp.writeNpy(poisoned, "a", missing));
    assertTrue(e.getMessage().startsWith("output file = '" + missing + "'") && e.getMessage().contains("does not exist"),
        e.getMessage());
    e = assertThrows(InvalidInputException.class, () -> FoldCp.writeNpy(poisoned, "a", existing));
    assertTrue(e.getMessage().contains("is a folder"), e.getMessage());
  }

  @Test
  void theOperatorsOutputWrittenPerComplexEqualsTheSingleFilePathByteForByte() throws IOException {
    Path in = Files.createDirectory(dir.resolve("in"));
    DataSession.write(in, "a", DataSession.complex(13, 1, true));
    Npy.writePair(in.resolve("b.npy"), DataSession.complex(20, 2, false), 3);
    LayerStack stack = LayerStack.randomAlternating(2, 8, 5, true);
    FoldCpOptions options = FoldCpOptions.fromConf().withRoute("shuffle").withGrid("2x2"); // tiles of 4 ranks
    Dataset<Row> out = FoldCp.apply(FoldCpData.tilesFromDirectory(spark, DataSession.uri(in)), stack, options);

    Path outDir = dir.resolve("out");
    FoldCpData.writeNpyDirectory(out, DataSession.uri(outDir));

    assertEquals(Set.of("a.npy", "b.npy", "_SUCCESS"), visibleAndMarker(outDir));
    for (String id : List.of("a", "b")) {
      Path single = dir.resolve(id + "-single.npy");
      FoldCp.writeNpy(out, id, single);
      assertArrayEquals(Files.readAllBytes(single), Files.readAllBytes(outDir.resolve(id + ".npy")), id);
    }
    FoldCpData.writeNpyDirectory(out, DataSession.uri(dir.resolve("out3")), 3);
    assertEquals(3, Npy.pairRank(dir.resolve("out3").resolve("a.npy")));
  }

  /**
   * The first attempt of the write task fails after it has written complex a whole and the first
   * band of b: nothing of it is visible in the output directory, and the retry writes both files
   * right.
   */
  @Test
  void aTaskThatFailsMidWriteLeavesNoFileAndItsRetryWritesTheRightOnes() throws IOException {
    PARTIAL.clear();
    FAILURES.set(0);
    PairTensor a = DataSession.complex(9, 3, true);
    PairTensor b = DataSession.complex(64, 4, false);
    List<TileRecord> tiles = new ArrayList<>();
    tiles.add(new TileRecord("a", 9, 0, 0, a));
    tiles.addAll(new RowBands(2L * 64 * 8 * 32).cut(new TileRecord("b", 64, 0, 0, b))); // two bands of 32 rows
    Path outDir = dir.resolve("out");

    FoldCpData.save(records(tiles, outDir, false), DataSession.uri(outDir), 4, conf());

    assertEquals(1, FAILURES.get(), "the first attempt failed");
    assertEquals(1, PARTIAL.size(), "the failing attempt had b.npy half written: " + PARTIAL);
    assertTrue(PARTIAL.get(0).toString().contains("_temporary"), "in its attempt's directory: " + PARTIAL.get(0));
    assertEquals(Set.of("a.npy", "b.npy", "_SUCCESS"), visibleAndMarker(outDir));
    assertFalse(Files.exists(outDir.resolve("_temporary")), "the committer cleaned up");
    assertTrue(Npy.readPair(outDir.resolve("a.npy")).sameAs(withoutMask(a)));
    assertTrue(Npy.readPair(outDir.resolve("b.npy")).sameAs(b));
  }

  @Test
  void aWriteThatFailsEveryAttemptLeavesNoComplexFile() throws IOException {
    PARTIAL.clear();
    FAILURES.set(0);
    List<TileRecord> tiles = new ArrayList<>(
        new RowBands(2L * 64 * 8 * 32).cut(new TileRecord("b", 64, 0, 0, DataSession.complex(64, 4, false))));
    Path outDir = dir.resolve("out");

    Exception e = assertThrows(Exception.class,
        () -> FoldCpData.save(records(tiles, outDir, true), DataSession.uri(outDir), 4, conf()));

    assertTrue(NpyTilesSourceTest.rootMessage(e).contains("injected failure"), NpyTilesSourceTest.rootMessage(e));
    assertEquals(2, FAILURES.get(), "both attempts failed");
    assertEquals(Set.of(), visibleAndMarker(outDir), "no .npy and no _SUCCESS");
  }

  @Test
  void tilesOfAComplexWithAGapFailTheTaskNamingThePosition() {
    PairTensor b = DataSession.complex(12, 4, false);
    List<TileRecord> bands = new RowBands(2L * 12 * 8 * 4).cut(new TileRecord("b", 12, 0, 0, b));
    List<TileRecord> gap = List.of(bands.get(0), bands.get(2));
    JavaPairRDD<String, TileRecord> rdd = JavaSparkContext.fromSparkContext(spark.sparkContext())
        .parallelize(gap, 1).mapToPair(t -> new Tuple2<>(t.complexId, t));
    Exception e = assertThrows(Exception.class,
        () -> FoldCpData.save(rdd, DataSession.uri(dir.resolve("out")), 4, conf()));
    String m = NpyTilesSourceTest.rootMessage(e);
    assertTrue(m.contains("tile of complex 'b'") && m.contains("must start at (row 4, column 0)"), m);
    assertFalse(Files.exists(dir.resolve("out").resolve("b.npy")), "no b.npy");
  }

  /**
   * The tiles as (id, tile) records in one partition; the stream throws after the first band of b
   * in the first attempt ({@code always}: in every attempt), once the writer has written that band.
   */
  private static JavaPairRDD<String, TileRecord> records(List<TileRecord> tiles, Path outDir, boolean always) {
    String out = outDir.toString(); // a Path is not serializable
    return JavaSparkContext.fromSparkContext(spark.sparkContext()).parallelize(tiles, 1)
        .mapPartitions(it -> failingAfterFirstBandOfB(it, Path.of(out), always))
        .mapToPair(t -> new Tuple2<>(t.complexId, t));
  }

  private static Iterator<TileRecord> failingAfterFirstBandOfB(Iterator<TileRecord> it, Path outDir, boolean always) {
    return new Iterator<>() {
      private boolean bStarted;

      @Override
      public boolean hasNext() {
        boolean more = it.hasNext();
        if (bStarted && (always || TaskContext.get().attemptNumber() == 0)) {
          // the writer has the first band of b; its file is open in the attempt's directory
          FAILURES.incrementAndGet();
          PARTIAL.addAll(find(outDir, "b.npy"));
          throw new IllegalStateException("injected failure after the first band of b");
        }
        return more;
      }

      @Override
      public TileRecord next() {
        TileRecord t = it.next();
        bStarted |= t.complexId.equals("b");
        return t;
      }
    };
  }

  private static List<Path> find(Path root, String name) {
    try (Stream<Path> s = Files.walk(root)) {
      return s.filter(p -> p.getFileName().toString().equals(name)).toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Names in {@code dir} that Hadoop and Spark do not hide, plus _SUCCESS. */
  private static Set<String> visibleAndMarker(Path dir) throws IOException {
    Set<String> out = new TreeSet<>();
    if (!Files.isDirectory(dir)) {
      return out;
    }
    try (Stream<Path> s = Files.list(dir)) {
      s.map(p -> p.getFileName().toString())
          .filter(n -> n.equals("_SUCCESS") || !(n.startsWith("_") || n.startsWith(".")))
          .forEach(out::add);
    }
    return out;
  }

  private static org.apache.hadoop.conf.Configuration conf() {
    return spark.sparkContext().hadoopConfiguration();
  }

  /** The values of {@code x}: an .npy pair file does not hold the mask. */
  private static PairTensor withoutMask(PairTensor x) {
    PairTensor c = x.copy();
    c.setMask(null);
    return c;
  }
}
