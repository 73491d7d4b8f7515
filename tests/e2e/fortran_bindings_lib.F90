! A module of types whose bindings are ordinary module procedures, as people write them: no
! `!$omp declare target` anywhere in it (the counters' `count` aside, which is how the checks
! see which copy ran). Compiled apart from its driver (`fortran_bindings.F90`). The device copies
! of the procedures come from the pass plugin, which copies them from this file's host IR into
! its device IR; built without that (OMPTARGET_INDIRECT_BINDING_COPIES=0) the first call on the
! device stops at the stub that names the binding.

#define COUNTED_NAMES [character(len=9) :: 'square', 'cube', 'tesseract', 'prism', 'meter']
#include "fortran_counters.inc"

module polygons
  use counters, only: count
  implicit none

  ! The weights of the meter's readings: a constant table the device copies read.
  real, parameter :: weights(4) = [0.5, 1.0, 2.0, 4.0]

  type, abstract :: figure
    real :: side = 0
  contains
    procedure(measure), deferred :: area
    procedure(resize), deferred :: grow
  end type

  abstract interface
    real function measure(self)
      import :: figure
      class(figure), intent(in) :: self
    end function
    subroutine resize(self, by)
      import :: figure
      class(figure), intent(inout) :: self
      real, intent(in) :: by
    end subroutine
  end interface

  type, extends(figure) :: square
  contains
    procedure :: area => square_area
    procedure :: grow => square_grow
  end type

  type, extends(square) :: cube
  contains
    procedure :: area => cube_area
  end type

  type, extends(cube) :: tesseract
  contains
    procedure :: area => tesseract_area
    procedure :: grow => tesseract_grow
  end type

  ! An extension with a component of its own.
  type, extends(square) :: prism
    real :: height = 1
  contains
    procedure :: area => prism_area
  end type

  ! Binding forms: one calling another, `non_overridable`, the passed object second
  ! (`pass(self)`), a generic binding of two specifics, one whose procedure calls a module
  ! procedure that has no binding.
  type :: meter
    real :: v = 1
    integer :: weight = 1
  contains
    procedure :: reading => meter_reading
    procedure :: twice => meter_twice
    procedure, non_overridable :: offset => meter_offset
    procedure, pass(self) :: scaled => meter_scaled
    procedure :: plus_real => meter_plus_real
    procedure :: plus_int => meter_plus_int
    generic :: plus => plus_real, plus_int
  end type

  type, extends(meter) :: fine_meter
  contains
    procedure :: reading => fine_meter_reading
  end type

  type, extends(figure) :: hexagon
  contains
    procedure :: area => hexagon_area
    procedure :: grow => hexagon_grow
  end type

contains

  real function square_area(self)
    class(square), intent(in) :: self
    call count(1)
    square_area = self%side ** 2
  end function

  real function cube_area(self)
    class(cube), intent(in) :: self
    call count(2)
    cube_area = 6 * self%side ** 2
  end function

  real function tesseract_area(self)
    class(tesseract), intent(in) :: self
    call count(3)
    tesseract_area = 24 * self%side ** 2
  end function

  real function prism_area(self)
    class(prism), intent(in) :: self
    call count(4)
    prism_area = 2 * self%side ** 2 + 4 * self%side * self%height
  end function

  subroutine square_grow(self, by)
    class(square), intent(inout) :: self
    real, intent(in) :: by
    call count(1)
    self%side = self%side + by
  end subroutine

  subroutine tesseract_grow(self, by)
    class(tesseract), intent(inout) :: self
    real, intent(in) :: by
    call count(3)
    self%side = self%side + 2 * by
  end subroutine

  real function weighted(x, k)
    real, intent(in) :: x
    integer, intent(in) :: k
    weighted = x * weights(max(1, min(k, size(weights))))
  end function

  real function meter_reading(self)
    class(meter), intent(in) :: self
    call count(5)
    meter_reading = weighted(self%v, self%weight)
  end function

  real function fine_meter_reading(self)
    class(fine_meter), intent(in) :: self
    call count(5)
    fine_meter_reading = weighted(self%v, self%weight) + 0.125
  end function

  real function meter_twice(self)
    class(meter), intent(in) :: self
    meter_twice = 2 * self%reading()
  end function

  real function meter_offset(self)
    class(meter), intent(in) :: self
    meter_offset = self%v + 100
  end function

  real function meter_scaled(by, self)
    real, intent(in) :: by
    class(meter), intent(in) :: self
    meter_scaled = by * self%reading()
  end function

  real function meter_plus_real(self, x)
    class(meter), intent(in) :: self
    real, intent(in) :: x
    meter_plus_real = self%v + x
  end function

  real function meter_plus_int(self, n)
    class(meter), intent(in) :: self
    integer, intent(in) :: n
    meter_plus_int = self%v + 10 * n
  end function

  ! Writes with flang's I/O runtime, which the device does not have: no device copy.
  real function hexagon_area(self)
    class(hexagon), intent(in) :: self
    hexagon_area = 2.598 * self%side ** 2
    print '(a, f0.3)', 'hexagon area ', hexagon_area
  end function

  subroutine hexagon_grow(self, by)
    class(hexagon), intent(inout) :: self
    real, intent(in) :: by
    self%side = self%side + by
  end subroutine
end module
