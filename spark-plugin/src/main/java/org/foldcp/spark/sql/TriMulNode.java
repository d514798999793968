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

  private final LayerStack stack;
  private final RoutePlan plan;
  private final Seq<Attribute> input;
  private final Seq<Attribute> output;
  private final LogicalPlan child;

  public TriMulNode(LayerStack stack, RoutePlan plan, Seq<Attribute> input, Seq<Attribute> output, LogicalPlan child) {
    this.stack = Objects.requireNonNull(stack, "stack");
    this.plan = Objects.requireNonNull(plan, "plan");
    this.input = Objects.requireNonNull(input, "input");
    this.output = Objects.requireNonNull(output, "output");
    this.child = Objects.requireNonNull(child, "child");
  }

  /** The operator over {@code child}, whose output must be exactly the columns of PairTiles.SCHEMA, in order. */
  static TriMulNode over(LogicalPlan child, LayerStack stack, RoutePlan plan) {
    @SuppressWarnings("unchecked")
    Seq<Attribute> out = (Seq<Attribute>) (Seq<?>) DataTypeUtils.toAttributes(PairTiles.SCHEMA);
    return new TriMulNode(stack, plan, child.output(), out, child);
  }

  public LayerStack stack() {
    return stack;
  }

  public RoutePlan plan() {
    return plan;
  }

  public Seq<Attribute> input() {
    return input;
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
    return output;
  }

  /** The output columns are made here, not taken from the child. */
  @Override
  public AttributeSet producedAttributes() {
    return Scala.attributeSet(output);
  }

  @Override
  public TriMulNode withNewChildInternal(LogicalPlan newChild) {
    return new TriMulNode(stack, plan, input, output, newChild);
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
    return TriMulText.simple(plan, stack);
  }

  @Override
  public String verboseString(int maxFields) {
    return TriMulText.verbose(plan, stack);
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
    return that instanceof TriMulNode;
  }

  /**
   * Case-class equality, as Catalyst expects of plan nodes (rules compare plans to see whether
   * they changed anything; the cache manager compares canonical plans). The stack and the route
   * plan compare by identity, having no value equality of their own; copies of a node share
   * those instances, so a node still equals its copies. TreeNode's hashCode hashes the same
   * product elements, so it agrees.
   */
  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof TriMulNode)) {
      return false;
    }
    TriMulNode t = (TriMulNode) o;
    return stack == t.stack && plan == t.plan && input.equals(t.input) && output.equals(t.output)
        && child.equals(t.child);
  }
}
