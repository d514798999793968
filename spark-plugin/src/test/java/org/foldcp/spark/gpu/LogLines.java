package org.foldcp.spark.gpu;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.Logger;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Property;

/**
 * The lines one logger writes while the test holds this open (Spark logs through log4j 2, so the
 * slf4j loggers of fold-cp do too): "logged once" is counted, not assumed.
 */
final class LogLines extends AbstractAppender implements AutoCloseable {
  private final Logger logger;
  private final Level levelBefore;
  private final List<String> lines = new CopyOnWriteArrayList<>();

  LogLines(Class<?> loggerOf) {
    super("test-lines-" + loggerOf.getSimpleName(), null, null, true, Property.EMPTY_ARRAY);
    logger = ((LoggerContext) LogManager.getContext(false)).getLogger(loggerOf.getName());
    levelBefore = logger.getLevel();
    start();
    logger.addAppender(this);
    logger.setLevel(Level.INFO);
  }

  @Override
  public void append(LogEvent event) {
    lines.add(event.getLevel() + " " + event.getMessage().getFormattedMessage());
  }

  /** The lines so far, each "LEVEL message". */
  List<String> lines() {
    return List.copyOf(lines);
  }

  @Override
  public void close() {
    logger.removeAppender(this);
    logger.setLevel(levelBefore);
    stop();
  }
}
