package org.foldcp.spark.sql;

import java.io.Serializable;
import java.util.Objects;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.route.RoutePlan;
import scala.collection.immutable.Seq;

/**
 * What the logical and the physical TriMul operator ({@link TriMulNode}, {@link TriMulExec}) hold
 * besides their child, and what they make of it as Catalyst nodes: their product elements, their
 * equality and their explain text. The two extend different Catalyst classes, so they share this
 * value instead of a superclass.
 */
final class TriMulArgs implements Serializable {
  private static final long serialVersionUID = 1L;

  /** A node's product arity: these four and its child. */
  static final int ARITY = 5;

  final LayerStack stack;
  final RoutePlan plan;
  /** The child columns the operator reads (PairTiles.SCHEMA order), found in the child by expression id. */
  final Seq<Attribute> input;
  final Seq<Attribute> output;

  TriMulArgs(LayerStack stack, RoutePlan plan, Seq<Attribute> input, Seq<Attribute> output) {
    this.stack = Objects.requireNonNull(stack, "stack");
    this.plan = Objects.requireNonNull(plan, "plan");
    this.input = Objects.requireNonNull(input, "input");
    this.output = Objects.requireNonNull(output, "output");
  }

  /** Product element {@code n} of a node whose child is {@code child}: the constructor's parameters, in order. */
  Object element(int n, Object child) {
    switch (n) {
      case 0: return stack;
      case 1: return plan;
      case 2: return input;
      case 3: return output;
      case 4: return child;
      default: throw new IndexOutOfBoundsException(String.valueOf(n));
    }
  }

  /**
   * Case-class equality of the four, as Catalyst expects of plan nodes (rules compare plans to see
   * whether they changed anything; the cache manager compares canonical plans). The stack and the
   * route plan compare by identity, having no value equality of their own; copies of a node share
   * those instances, so a node still equals its copies. TreeNode's hashCode hashes the same
   * product elements, so it agrees.
   */
  boolean sameAs(TriMulArgs o) {
    return stack == o.stack && plan == o.plan && input.equals(o.input) && output.equals(o.output);
  }

  String simpleString() {
    return TriMulText.simple(plan, stack);
  }

  String verboseString() {
    return TriMulText.verbose(plan, stack);
  }
}
