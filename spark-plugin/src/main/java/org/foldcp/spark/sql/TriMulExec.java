package org.foldcp.spark.sql;

import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.execution.ExplainUtils;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.UnaryExecNode;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.barrier.BarrierRoute;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.route.SharedStack;
import org.foldcp.spark.route.TileRoute;
import org.foldcp.spark.tiles.Retiling;
import org.foldcp.spark.tiles.TileRecord;
import scala.collection.immutable.Map;
import scala.collection.immutable.Seq;

/**
 * The physical TriMul operator: decodes its child's pair tiles, runs the route's TileRoute over
 * them and emits the output tiles as rows of PairTiles.SCHEMA, streamed: a task holds the tile
 * it is encoding, not its partition's output. Its SQL metrics follow the plan's level ({@link
 * SqlRouteMetrics}): Spark's numOutputRows and opTime, then the route's counts, bytes and times.
 *
 * <p>The operator is row-based, in and out, and says so: a tile is one row decoded whole, and
 * columnar batches would put several multi-GB tiles into one column vector, which cannot hold
 * more than 2 GiB. Spark's own transition rules put a ColumnarToRow under it when its child
 * produces batches only (a vectorized scan); nothing is rewritten by the operator itself.
 *
 * <p>Product elements and constructor parameters match, as for {@link TriMulNode}.
 */
public final class TriMulExec extends SparkPlan implements UnaryExecNode {
  private static final long serialVersionUID = 1L;

  private final TriMulArgs args;
  private final SparkPlan child;
  /** Created on first use on the driver, per node instance, as Spark's own operators do with a lazy val. */
  private transient SqlRouteMetrics routeMetrics;

  public TriMulExec(LayerStack stack, RoutePlan plan, Seq<Attribute> input, Seq<Attribute> output, SparkPlan child) {
    this.args = new TriMulArgs(stack, plan, input, output);
    this.child = Objects.requireNonNull(child, "child");
  }

  public LayerStack stack() {
    return args.stack;
  }

  public RoutePlan plan() {
    return args.plan;
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
    return args.output;
  }

  @Override
  public synchronized Map<String, SQLMetric> metrics() {
    return Scala.orderedMap(routeMetrics().byName());
  }

  private synchronized SqlRouteMetrics routeMetrics() {
    if (routeMetrics == null) {
      routeMetrics = SqlRouteMetrics.create(sparkContext(), args.plan.metricsLevel);
    }
    return routeMetrics;
  }

  @Override
  public RDD<InternalRow> doExecute() {
    SqlRouteMetrics metrics = routeMetrics();
    LayerStack stack = args.stack;
    RoutePlan plan = args.plan;
    if (plan.kind == RoutePlan.Kind.SINGLE) {
      return singleRank(child.execute(), ordinals(), SharedStack.of(sparkContext(), stack), plan, metrics);
    }
    TileRoute route = Routes.forKind(plan.kind);
    JavaRDD<TileRecord> tiles = decode(child.execute(), ordinals());
    JavaRDD<TileRecord> out = route.run(tiles, stack, plan, metrics);
    if (plan.kind == RoutePlan.Kind.BARRIER) {
      // show(), take() and a stage retry all need the output out of the barrier stage
      out = BarrierRoute.leaveBarrierStage(out);
    }
    return encode(out, metrics).rdd();
  }

  /** Where each field of PairTiles.SCHEMA sits in the child's rows, found by expression id. */
  private int[] ordinals() {
    List<Attribute> in = Scala.list(args.input);
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
    return rows.toJavaRDD().map(r -> TileRows.decode(r, ordinals));
  }

  /** The cp = 1 route: rows to rows per partition ({@link SingleRankRows}: the GPU feed or the decoding path). */
  private static RDD<InternalRow> singleRank(RDD<InternalRow> rows, int[] ordinals, SharedStack shared, RoutePlan plan,
                                             SqlRouteMetrics metrics) {
    return rows.toJavaRDD().mapPartitions(in -> SingleRankRows.forward(in, ordinals, shared, plan, metrics)).rdd();
  }

  /** Rows decoded one by one as they are pulled. */
  static Iterator<TileRecord> decode(Iterator<InternalRow> rows, int[] ordinals) {
    return new Iterator<>() {
      @Override
      public boolean hasNext() {
        return rows.hasNext();
      }

      @Override
      public TileRecord next() {
        return TileRows.decode(rows.next(), ordinals);
      }
    };
  }

  /** Output tiles cropped to N (tiles of padding only are dropped), one row each, counted. */
  private static JavaRDD<InternalRow> encode(JavaRDD<TileRecord> tiles, SqlRouteMetrics metrics) {
    return tiles.mapPartitions(it -> encode(it, metrics));
  }

  /** As {@link #encode(JavaRDD, SqlRouteMetrics)}, for one partition's iterator. */
  static Iterator<InternalRow> encode(Iterator<TileRecord> it, SqlRouteMetrics metrics) {
    java.util.function.Function<TileRecord, InternalRow> encoder = TileRows.encoder();
    Iterator<TileRecord> out = cropped(it);
    return new Iterator<InternalRow>() {
      @Override
      public boolean hasNext() {
        return out.hasNext();
      }

      @Override
      public InternalRow next() {
        InternalRow row = encoder.apply(out.next());
        metrics.outputRow();
        return row;
      }
    };
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

  @Override
  public TriMulExec withNewChildInternal(SparkPlan newChild) {
    return new TriMulExec(args.stack, args.plan, args.input, args.output, newChild);
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
    return args.simpleString();
  }

  @Override
  public String verboseString(int maxFields) {
    return args.verboseString();
  }

  /**
   * Written out here because a Java class inherits QueryPlan's version, not UnaryExecNode's
   * default; that one would print every product element, the whole layer stack included.
   */
  @Override
  public String verboseStringWithOperatorId() {
    return TriMulText.formatted(formattedNodeName(), ExplainUtils.generateFieldString("Input", child.output()),
        args.plan, args.stack);
  }

  @Override
  public int productArity() {
    return TriMulArgs.ARITY;
  }

  @Override
  public Object productElement(int n) {
    return args.element(n, child);
  }

  @Override
  public boolean canEqual(Object that) {
    return that instanceof TriMulExec;
  }

  /** Case-class equality over the product elements ({@link TriMulArgs#sameAs}). */
  @Override
  public boolean equals(Object o) {
    return this == o || o instanceof TriMulExec t && args.sameAs(t.args) && child.equals(t.child);
  }
}
