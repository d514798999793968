package org.foldcp.ops.cp;

import java.io.Serializable;
import java.util.Objects;

/** One process of a CP team as it announced itself: its host and the GPU (or slot) it owns. */
public final class TeamMember implements Serializable {
  private static final long serialVersionUID = 1L;

  public final String host;
  public final int device;

  public TeamMember(String host, int device) {
    this.host = Objects.requireNonNull(host, "host");
    this.device = device;
  }

  /** Parses "host:device", the form the barrier tasks exchange. */
  public static TeamMember parse(String s) {
    int colon = s == null ? -1 : s.lastIndexOf(':');
    if (colon <= 0) {
      throw org.foldcp.ops.InvalidInputException.of("team member", "'" + s + "'", "must look like host:device");
    }
    try {
      return new TeamMember(s.substring(0, colon), Integer.parseInt(s.substring(colon + 1)));
    } catch (NumberFormatException e) {
      throw org.foldcp.ops.InvalidInputException.of("team member", "'" + s + "'", "the device after ':' must be an integer");
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TeamMember && ((TeamMember) o).host.equals(host) && ((TeamMember) o).device == device;
  }

  @Override
  public int hashCode() {
    return host.hashCode() * 31 + device;
  }

  @Override
  public String toString() {
    return host + ":" + device;
  }
}
