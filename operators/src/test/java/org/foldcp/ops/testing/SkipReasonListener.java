package org.foldcp.ops.testing;

import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;

/**
 * Prints every skipped or aborted test with its reason on the console, so that a CI log shows
 * plainly which GPU tests did not run and why (Surefire alone only counts them).
 * Registered through META-INF/services for every module that has the operators test-jar.
 */
public final class SkipReasonListener implements TestExecutionListener {
  @Override
  public void executionSkipped(TestIdentifier test, String reason) {
    System.out.println("[SKIPPED] " + test.getDisplayName() + ": " + reason);
  }

  @Override
  public void executionFinished(TestIdentifier test, TestExecutionResult result) {
    if (result.getStatus() == TestExecutionResult.Status.ABORTED) {
      String why = result.getThrowable().map(Throwable::getMessage).orElse("no reason given");
      System.out.println("[SKIPPED] " + test.getDisplayName() + ": " + why);
    }
  }
}
