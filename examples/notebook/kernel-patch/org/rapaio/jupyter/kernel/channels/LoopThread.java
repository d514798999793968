package org.rapaio.jupyter.kernel.channels;

/**
 * A replacement, put ahead of the kernel jar on the class path by install-kernel, for the class of
 * the same name in rapaio-jupyter-kernel 3.0.1 (same constructor and methods). There, start()
 * calls Thread.start() before it sets {@code running}, so a channel thread that gets a core at
 * once reads false and ends before its first poll: the kernel then never answers Jupyter
 * ("Kernel didn't respond in 60 seconds"), about one start in four on a busy two-core machine.
 * Here {@code running} is set first.
 */
public final class LoopThread extends Thread {
  private volatile boolean running;
  private final long sleep;
  private final Runnable loopBody;

  public LoopThread(String name, long sleep, Runnable loopBody) {
    super(name);
    this.sleep = sleep;
    this.loopBody = loopBody;
  }

  @Override
  public void run() {
    try {
      while (running) {
        loopBody.run();
        Thread.sleep(sleep);
      }
    } catch (InterruptedException e) {
      running = false;
    }
  }

  @Override
  public synchronized void start() {
    running = true;
    super.start();
  }

  public void shutdown() {
    running = false;
  }
}
