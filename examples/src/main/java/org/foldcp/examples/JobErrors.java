package org.foldcp.examples;

import java.io.PrintStream;
import java.util.IdentityHashMap;
import java.util.Map;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Marker;
import org.apache.logging.log4j.core.Appender;
import org.apache.logging.log4j.core.Filter;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.Logger;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.ConsoleAppender;
import org.apache.logging.log4j.core.filter.AbstractFilterable;
import org.apache.logging.log4j.core.filter.AbstractFilter;
import org.apache.logging.log4j.message.Message;
import org.foldcp.ops.InvalidInputException;

/**
 * The job's one error style: a failure the user can fix (a bad option, a bad spark.foldcp.*
 * setting, a bad input, too few task slots) is one line on stderr naming the value and the rule,
 * and exit code 2; its stack trace only with {@code --verbose}. Spark wraps such failures (a
 * plugin that refused the configuration, a task that failed), so the cause chain is searched for
 * the first fold-cp exception. Anything else is a bug or an environment failure and keeps its
 * stack trace.
 */
final class JobErrors {
  /** Exit code of a failure the user can fix. */
  static final int USER_ERROR = 2;

  private JobErrors() {}

  /**
   * The fold-cp exception in {@code t}'s cause chain that the user can act on: an
   * {@link InvalidInputException}, or an IllegalArgumentException / IllegalStateException thrown
   * by fold-cp code; null when there is none.
   */
  static RuntimeException userError(Throwable t) {
    Map<Throwable, Boolean> seen = new IdentityHashMap<>();
    for (Throwable c = t; c != null && seen.put(c, Boolean.TRUE) == null; c = c.getCause()) {
      if (c instanceof InvalidInputException) {
        return (RuntimeException) c;
      }
      if ((c instanceof IllegalArgumentException || c instanceof IllegalStateException) && thrownByFoldCp(c)) {
        return (RuntimeException) c;
      }
    }
    return null;
  }

  private static boolean thrownByFoldCp(Throwable t) {
    StackTraceElement[] st = t.getStackTrace();
    return st.length > 0 && st[0].getClassName().startsWith("org.foldcp.");
  }

  /**
   * Reports {@code failure} the job's way when it is a user error: one line on {@code err} (plus
   * the stack trace when {@code verbose}); the caller then exits with {@link #USER_ERROR}.
   *
   * @return whether it was a user error and was reported; any other failure is the caller's to rethrow
   */
  static boolean report(Throwable failure, boolean verbose, PrintStream err) {
    RuntimeException user = userError(failure);
    if (user == null) {
      return false;
    }
    err.println("error: " + oneLine(user.getMessage()));
    if (verbose) {
      failure.printStackTrace(err);
    }
    return true;
  }

  static String oneLine(String message) {
    return message == null ? "(no message)" : message.strip().replaceAll("\\s*\\R\\s*", " ");
  }

  /**
   * Without --verbose, keeps the screen for the job's own lines: on the console only fold-cp's
   * loggers show (everything still goes to the log file of conf/log4j2.properties), and no stack
   * traces anywhere: Spark logs a failed SparkContext start
   * and every failed task with its trace before the job can report the cause in one line. Drops
   * log events that carry a throwable, and the task-failure lines of Spark's scheduler (each a
   * copy of a task's stack trace). Does nothing where the logging backend is not log4j2 core.
   *
   * @return what puts the log back as it was
   */
  static Runnable quietStackTraces() {
    if (!(LogManager.getContext(false) instanceof LoggerContext ctx)) {
      return () -> { };
    }
    Filter filter = new NoStackTraces();
    ctx.getConfiguration().addFilter(filter);
    // the screen (console appenders) shows fold-cp's own lines only; Spark's and Hadoop's warnings
    // that a user cannot act on (hostname, native-hadoop, ...) still reach the log file
    Filter ownLines = new OwnLinesOnly();
    java.util.List<AbstractFilterable> consoles = new java.util.ArrayList<>();
    for (Appender a : ctx.getConfiguration().getAppenders().values()) {
      if (a instanceof ConsoleAppender c) {
        c.addFilter(ownLines);
        consoles.add(c);
      }
    }
    ctx.updateLoggers();
    return () -> {
      ctx.getConfiguration().removeFilter(filter);
      for (AbstractFilterable c : consoles) {
        c.removeFilter(ownLines);
      }
      ctx.updateLoggers();
    };
  }

  /** Lets only fold-cp's own loggers (org.foldcp.*) through. */
  private static final class OwnLinesOnly extends AbstractFilter {
    @Override
    public Result filter(LogEvent event) {
      String name = event.getLoggerName();
      return name != null && name.startsWith("org.foldcp") ? Result.NEUTRAL : Result.DENY;
    }
  }

  /** Denies log events with a throwable, and Spark's task-failure lines; neutral otherwise. */
  private static final class NoStackTraces extends AbstractFilter {
    NoStackTraces() {
      super(Filter.Result.NEUTRAL, Filter.Result.NEUTRAL);
    }

    private static Result decide(String logger, Level level, Object msg, Throwable t) {
      if (t != null) {
        return Result.DENY;
      }
      if (logger != null && logger.startsWith("org.apache.spark.scheduler.TaskSetManager") && level.isMoreSpecificThan(Level.WARN)) {
        return Result.DENY; // "Lost task ...: <stack trace>", "Task n in stage s failed; aborting job"
      }
      return Result.NEUTRAL;
    }

    private static Throwable last(Object... params) {
      return params != null && params.length > 0 && params[params.length - 1] instanceof Throwable th ? th : null;
    }

    @Override
    public Result filter(LogEvent event) {
      return decide(event.getLoggerName(), event.getLevel(), null, event.getThrown());
    }

    @Override
    public Result filter(Logger logger, Level level, Marker marker, Message msg, Throwable t) {
      return decide(logger.getName(), level, msg, t != null ? t : msg == null ? null : msg.getThrowable());
    }

    @Override
    public Result filter(Logger logger, Level level, Marker marker, Object msg, Throwable t) {
      return decide(logger.getName(), level, msg, t);
    }

    @Override
    public Result filter(Logger logger, Level level, Marker marker, String msg, Object... params) {
      return decide(logger.getName(), level, msg, last(params));
    }
  }
}
