java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.INFO);
