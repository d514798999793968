package org.foldcp.spark.sql;

import java.util.Objects;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.UnaryNode;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.tiles.PairTiles;
import scala.collection.immutable.Seq;

/**
 * The logical TriMul operator: a layer stack applied to the pair tiles of its child, by the route
 * in {@code plan}. Output: fresh attributes of {@link PairTiles#SCHEMA}, one row per (complex,
 * rank) of the route's layout.
 *
 * <p>Written in Java against Catalyst's Scala API, so it spells out what a case class would
 * generate: the product elements are exactly the public constructor's parameters, in order,
 * which is what TreeNode.makeCopy relies on when a rule rewrites an expression. {@code input}
 * lists the child columns the operator reads (PairTiles.SCHEMA order), so that column pruning
 * below it keeps them and the physical operator finds them by expression id.
 */
public final class TriMulNode extends LogicalPlan implements UnaryNode {
  private static final long serialVersionUID = 1L;

  private final TriMulArgs args;
  private final LogicalPlan child;

  public TriMulNode(LayerStack stack, RoutePlan plan, Seq<Attribute> input, Seq<Attribute> output, LogicalPlan child) {
    this.args = new TriMulArgs(stack, plan, input, output);
    this.child = Objects.requireNonNull(child, "child");
  }

  /** The operator over {@code child}, whose output must be exactly the columns of PairTiles.SCHEMA, in order. */
  static TriMulNode over(LogicalPlan child, LayerStack stack, RoutePlan plan) {
    @SuppressWarnings("unchecked")
    Seq<Attribute> out = (Seq<Attribute>) (Seq<?>) DataTypeUtils.toAttributes(PairTiles.SCHEMA);
    return new TriMulNode(stack, plan, child.output(), out, child);
  }

  public LayerStack stack() {
    return args.stack;
  }

  public RoutePlan plan() {
    return args.plan;
  }

  public Seq<Attribute> input() {
    return args.input;
  }

  @Override
  public LogicalPlan child() {
    return child;
  }

  @Override
  public Seq<LogicalPlan> children() {
    return Scala.seq(child);
  }

  @Override
  public Seq<Attribute> output() {
    return args.output;
  }

  /** The output columns are made here, not taken from the child. */
  @Override
  public AttributeSet producedAttributes() {
    return Scala.attributeSet(args.output);
  }

  @Override
  public TriMulNode withNewChildInternal(LogicalPlan newChild) {
    return new TriMulNode(args.stack, args.plan, args.input, args.output, newChild);
  }

  @Override
  public LogicalPlan withNewChildrenInternal(scala.collection.immutable.IndexedSeq<LogicalPlan> newChildren) {
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
    return that instanceof TriMulNode;
  }

  /** Case-class equality over the product elements ({@link TriMulArgs#sameAs}). */
  @Override
  public boolean equals(Object o) {
    return this == o || o instanceof TriMulNode t && args.sameAs(t.args) && child.equals(t.child);
  }
}
