package org.foldcp.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class EditDistanceTest {
  @Test
  void countsInsertionsDeletionsSubstitutionsAndSwapsAsOneEditEach() {
    assertEquals(0, EditDistance.between("cp", "cp"));
    assertEquals(1, EditDistance.between("cpp", "cp"));
    assertEquals(1, EditDistance.between("grdi", "grid"));
    assertEquals(3, EditDistance.between("kitten", "sitting"));
    assertEquals(4, EditDistance.between("", "grid"));
    assertEquals(4, EditDistance.between("grid", ""));
    assertEquals(1, EditDistance.between("layers.0.", "layers.1."));
  }
}
