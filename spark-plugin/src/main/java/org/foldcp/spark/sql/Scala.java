package org.foldcp.spark.sql;

import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.expressions.AttributeSet$;
import org.apache.spark.sql.catalyst.expressions.Expression;
import scala.collection.immutable.ListMap$;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/** The few Scala collection conversions the Catalyst nodes need, in one place. */
final class Scala {
  private Scala() {}

  static <T> Seq<T> seq(List<T> items) {
    return CollectionConverters.asScala(items).toSeq();
  }

  static <T> Seq<T> seq() {
    return seq(List.of());
  }

  static <T> Seq<T> seq(T item) {
    return seq(List.of(item));
  }

  static <T> List<T> list(scala.collection.Seq<T> items) {
    return CollectionConverters.asJava(items);
  }

  /** An immutable Scala map keeping {@code entries}' iteration order (SQL metrics list in this order). */
  static <K, V> scala.collection.immutable.Map<K, V> orderedMap(Map<K, V> entries) {
    return ListMap$.MODULE$.from(CollectionConverters.asScala(entries));
  }

  @SuppressWarnings("unchecked")
  static AttributeSet attributeSet(Seq<Attribute> attributes) {
    return AttributeSet$.MODULE$.apply((scala.collection.Iterable<Expression>) (Object) attributes);
  }
}
