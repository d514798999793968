package org.foldcp.spark.sql;

import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.execution.ExplainUtils;
import org.apache.spark.sql.execution.RowToColumnarExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.UnaryExecNode;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.route.TileRoute;
import org.foldcp.spark.tiles.Retiling;
import org.foldcp.spark.tiles.TileRecord;
import scala.collection.immutable.Map;
import scala.collection.immutable.Seq;

/**
 * The physical TriMul operator: decodes its child's pair tiles, runs the route's TileRoute over
 * them and emits the output tiles as columnar batches of PairTiles.SCHEMA (Spark puts a
 * ColumnarToRow above it where rows are wanted). Its SQL metrics are the route's: output tiles,
 * pair bytes in and out, compute and reshard time.
 *
 * <p>The operator reads rows, not batches: a tile row is decoded whole anyway, and a
 * row-to-columnar copy would put many multi-GB tiles into one column vector, which cannot hold
 * more than 2 GiB. Spark's transition rule assumes a columnar operator wants columnar input and
 * wraps a row-based child in RowToColumnar; {@link #withNewChildInternal} takes that wrapper off
 * again, so the plan shows (and runs) exactly what executes. A child that only produces batches
 * (a vectorized scan) is read through the batches' rows.
 *
 * <p>Product elements and constructor parameters match, as for {@link TriMulNode}.
 */
public final class TriMulExec extends SparkPlan implements UnaryExecNode {
  private static final long serialVersionUID = 1L;

  private final LayerStack stack;
  private final RoutePlan plan;
  private final Seq<Attribute> input;
  private final Seq<Attribute> output;
  private final SparkPlan child;
  /** Created on first use on the driver, per node instance, as Spark's own operators do with a lazy val. */
  private transient SqlRouteMetrics routeMetrics;

  public TriMulExec(LayerStack stack, RoutePlan plan, Seq<Attribute> input, Seq<Attribute> output, SparkPlan child) {
    this.stack = Objects.requireNonNull(stack, "stack");
    this.plan = Objects.requireNonNull(plan, "plan");
    this.input = Objects.requireNonNull(input, "input");
    this.output = Objects.requireNonNull(output, "output");
    this.child = Objects.requireNonNull(child, "child");
  }

  public LayerStack stack() {
    return stack;
  }

  public RoutePlan plan() {
    return plan;
  }

  @Override
  public SparkPlan child() {
    return child;
  }

  @Override
  public Seq<SparkPlan> children() {
    return Scala.seq(child);
  }

  @Override
  public Seq<Attribute> output() {
    return output;
  }

  @Override
  public boolean supportsColumnar() {
    return true;
  }

  @Override
  public synchronized Map<String, SQLMetric> metrics() {
    return Scala.orderedMap(routeMetrics().byName());
  }

  private synchronized SqlRouteMetrics routeMetrics() {
    if (routeMetrics == null) {
      routeMetrics = SqlRouteMetrics.create(sparkContext());
    }
    return routeMetrics;
  }

  @Override
  public RDD<InternalRow> doExecute() {
    throw new IllegalStateException(TriMulText.NODE_NAME + " produces columnar batches only; Spark inserts"
        + " ColumnarToRow above it, so a row-wise execute() means a plan was built without transitions");
  }

  @Override
  public RDD<ColumnarBatch> doExecuteColumnar() {
    TileRoute route = Routes.forKind(plan.kind);
    JavaRDD<TileRecord> tiles = decode(childRows(), ordinals());
    JavaRDD<TileRecord> out = route.run(tiles, stack, plan, routeMetrics());
    if (plan.kind == RoutePlan.Kind.BARRIER) {
      out = leaveBarrierStage(out);
    }
    return encode(out).rdd();
  }

  /**
   * Ends the barrier stage with a shuffle of the output tiles. Spark refuses jobs that run only
   * some partitions of a barrier stage, which is what show(), take(), first() and limit() do; a
   * DataFrame that fails on show() is not one users can work with, so the output pays one
   * shuffle. The route's own API ({@code TileRoute.run}) does not, for callers that collect or
   * write everything.
   */
  static JavaRDD<TileRecord> leaveBarrierStage(JavaRDD<TileRecord> out) {
    int parts = Math.max(1, out.getNumPartitions());
    return out.mapToPair(t -> new scala.Tuple2<>(t.complexId + "#" + t.row0 + "," + t.col0, t))
        .partitionBy(new org.apache.spark.HashPartitioner(parts))
        .values();
  }

  private RDD<InternalRow> childRows() {
    if (child.supportsRowBased()) {
      return child.execute();
    }
    return child.executeColumnar().toJavaRDD().flatMap(ColumnarBatch::rowIterator).rdd();
  }

  /** Where each field of PairTiles.SCHEMA sits in the child's rows, found by expression id. */
  private int[] ordinals() {
    List<Attribute> in = Scala.list(input);
    List<Attribute> childOut = Scala.list(child.output());
    int[] ordinals = new int[in.size()];
    for (int f = 0; f < ordinals.length; f++) {
      ordinals[f] = -1;
      for (int c = 0; c < childOut.size(); c++) {
        if (childOut.get(c).exprId().equals(in.get(f).exprId())) {
          ordinals[f] = c;
          break;
        }
      }
      if (ordinals[f] < 0) {
        throw new IllegalStateException("input column " + in.get(f) + " of " + TriMulText.NODE_NAME
            + " is missing from its child's output " + childOut);
      }
    }
    return ordinals;
  }

  // Static, so that the task closures capture only what they name, never this plan node.
  private static JavaRDD<TileRecord> decode(RDD<InternalRow> rows, int[] ordinals) {
    return rows.toJavaRDD().map(r -> TileBatches.decode(r, ordinals));
  }

  /** Output tiles cropped to N (tiles of padding only are dropped), a few per batch. */
  private static JavaRDD<ColumnarBatch> encode(JavaRDD<TileRecord> tiles) {
    return tiles.mapPartitions(it -> TileBatches.batches(cropped(it)));
  }

  private static Iterator<TileRecord> cropped(Iterator<TileRecord> tiles) {
    return new Iterator<>() {
      private TileRecord next = advance();

      private TileRecord advance() {
        while (tiles.hasNext()) {
          TileRecord c = Retiling.crop(tiles.next());
          if (c != null) {
            return c;
          }
        }
        return null;
      }

      @Override
      public boolean hasNext() {
        return next != null;
      }

      @Override
      public TileRecord next() {
        if (next == null) {
          throw new java.util.NoSuchElementException();
        }
        TileRecord r = next;
        next = advance();
        return r;
      }
    };
  }

  /** Drops the RowToColumnar that Spark's transition rule puts under a columnar operator (see class comment). */
  @Override
  public TriMulExec withNewChildInternal(SparkPlan newChild) {
    SparkPlan c = newChild instanceof RowToColumnarExec ? ((RowToColumnarExec) newChild).child() : newChild;
    return new TriMulExec(stack, plan, input, output, c);
  }

  @Override
  public SparkPlan withNewChildrenInternal(scala.collection.immutable.IndexedSeq<SparkPlan> newChildren) {
    return withNewChildInternal(newChildren.apply(0));
  }

  @Override
  public String nodeName() {
    return TriMulText.NODE_NAME;
  }

  @Override
  public String simpleString(int maxFields) {
    return TriMulText.simple(plan, stack);
  }

  @Override
  public String verboseString(int maxFields) {
    return TriMulText.verbose(plan, stack);
  }

  /**
   * Written out here because a Java class inherits QueryPlan's version, not UnaryExecNode's
   * default; that one would print every product element, the whole layer stack included.
   */
  @Override
  public String verboseStringWithOperatorId() {
    return TriMulText.formatted(formattedNodeName(), ExplainUtils.generateFieldString("Input", child.output()), plan,
        stack);
  }

  @Override
  public int productArity() {
    return 5;
  }

  @Override
  public Object productElement(int n) {
    switch (n) {
      case 0: return stack;
      case 1: return plan;
      case 2: return input;
      case 3: return output;
      case 4: return child;
      default: throw new IndexOutOfBoundsException(String.valueOf(n));
    }
  }

  @Override
  public boolean canEqual(Object that) {
    return that instanceof TriMulExec;
  }

  /** Case-class equality over the product elements; see {@link TriMulNode#equals}. */
  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof TriMulExec)) {
      return false;
    }
    TriMulExec t = (TriMulExec) o;
    return stack == t.stack && plan == t.plan && input.equals(t.input) && output.equals(t.output)
        && child.equals(t.child);
  }
}
