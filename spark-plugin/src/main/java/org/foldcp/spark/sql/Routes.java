package org.foldcp.spark.sql;

import java.lang.reflect.InvocationTargetException;
import org.foldcp.spark.route.RoutePlan.Kind;
import org.foldcp.spark.route.SingleRankRoute;
import org.foldcp.spark.route.TileRoute;

/** The TileRoute behind each route kind. */
public final class Routes {
  /** Implementations of the CP routes, looked up by name until they are part of every build. */
  static final String BARRIER_CLASS = "org.foldcp.spark.barrier.BarrierRoute";
  static final String SHUFFLE_CLASS = "org.foldcp.spark.shuffle.ShuffleRoute";

  private Routes() {}

  /**
   * A new route of {@code kind}.
   *
   * @throws IllegalStateException when the kind's implementation is not in this build
   */
  public static TileRoute forKind(Kind kind) {
    switch (kind) {
      case SINGLE:
        return new SingleRankRoute();
      case BARRIER:
        return byName(BARRIER_CLASS, "barrier");
      case SHUFFLE:
        return byName(SHUFFLE_CLASS, "shuffle");
      default:
        throw new IllegalStateException("unhandled route kind " + kind);
    }
  }

  /** Whether {@link #forKind} can build a route of {@code kind} in this build. */
  public static boolean available(Kind kind) {
    switch (kind) {
      case BARRIER:
        return classExists(BARRIER_CLASS);
      case SHUFFLE:
        return classExists(SHUFFLE_CLASS);
      default:
        return true;
    }
  }

  private static boolean classExists(String name) {
    try {
      Class.forName(name, false, Routes.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException e) {
      return false;
    }
  }

  /** A new instance of {@code className}, the {@code route} route; errors name the class and what it lacks. */
  static TileRoute byName(String className, String route) {
    Class<?> type;
    try {
      type = Class.forName(className, true, Routes.class.getClassLoader());
    } catch (ClassNotFoundException e) {
      throw new IllegalStateException("the " + route + " route needs " + className + ", which is not in this"
          + " build of fold-cp-spark-plugin; run with spark.foldcp.cp = 1, or use a build that includes it", e);
    }
    if (!TileRoute.class.isAssignableFrom(type)) {
      throw new IllegalStateException(className + " does not implement " + TileRoute.class.getName());
    }
    try {
      return (TileRoute) type.getDeclaredConstructor().newInstance();
    } catch (InvocationTargetException e) {
      throw new IllegalStateException("creating the " + route + " route (" + className + ") failed: "
          + e.getCause(), e.getCause());
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("the " + route + " route " + className + " needs a public no-argument"
          + " constructor", e);
    }
  }
}
