// indirect_across.h's indirect functions, defined by both files of the program (template
// instances and an inline function), called on the device through the host addresses each file
// took (the linker keeps one host copy: the same addresses), here and in the other file's device
// code.
#include "check.h"
#include "indirect_across.h"

int main() {
  Taken mine = {twice<int>, twice<long>, thrice};
  Taken other = taken_by_other_file();
  EXPECT(mine.twice_int == other.twice_int && mine.thrice == other.thrice, "the files took different host copies");
  int ints[2] = {0, 0};
  long longs[5] = {0, 0, 0, 0, 0};
#pragma omp target map(to : mine, other) map(from : ints, longs)
  {
    ints[0] = mine.twice_int(21);
    ints[1] = other.twice_int(5);
    longs[0] = mine.twice_long(100);
    longs[1] = other.twice_long(7);
    longs[2] = mine.thrice(11);
    longs[3] = other.thrice(4);
    longs[4] = apply_in_other_file(mine.twice_long, 8);
  }
  EXPECT(ints[0] == 42, "twice<int>(21) = %d", ints[0]);
  EXPECT(ints[1] == 10, "twice<int>(5) = %d", ints[1]);
  EXPECT(longs[0] == 200, "twice<long>(100) = %ld", longs[0]);
  EXPECT(longs[1] == 14, "twice<long>(7) = %ld", longs[1]);
  EXPECT(longs[2] == 33, "thrice(11) = %ld", longs[2]);
  EXPECT(longs[3] == 12, "thrice(4) = %ld", longs[3]);
  EXPECT(longs[4] == 16, "twice<long>(8) through the other file's device code = %ld", longs[4]);
  return finish("indirect_across");
}
