! Type-bound procedures of polymorphic objects the host built, called on the device: the device
! copies of the bindings must run, and `select type`, `same_type_as` and `extends_type_of` must
! give the host's answers. The objects' descriptors carry the host's type descriptors; the pass
! plugin translates them to the device's (paired like C++ vtables), so nothing here names them.
! Without that (the vtables left out of the map) the strict device stops at the host's type
! descriptor, and the x86_64 device runs the host copies, which the counters catch.
!
! Shapes: `allocate(s, source=...)` of an abstract type's extension, a polymorphic array in a
! teams loop, a `class(...)` pointer re-pointed between regions, three levels of extension
! (shape, square, cube, tesseract), deferred bindings, a function and a subroutine binding; on a
! `gauge`'s extension a binding calling another, a `non_overridable` one, one whose passed object
! is not first (`pass(self)`) and a generic binding.
!
! Each binding's procedure is `!$omp declare target` here; `fortran_bindings.F90` has the
! bindings written without it.
!
! flang 23.1.4 maps a polymorphic object with its declared type's size, and divides by that size
! in its default mapper: the data the device reads lives in the abstract base type, which has a
! component (docs/fortran.md).

#define COUNTED_NAMES [character(len=9) :: 'square', 'cube', 'tesseract']
#include "fortran_counters.inc"

module shapes
  use counters, only: count
  implicit none

  type, abstract :: shape
    real :: side = 0
  contains
    procedure(measure), deferred :: area
    procedure(resize), deferred :: grow
  end type

  abstract interface
    real function measure(self)
      import :: shape
      class(shape), intent(in) :: self
    end function
    subroutine resize(self, by)
      import :: shape
      class(shape), intent(inout) :: self
      real, intent(in) :: by
    end subroutine
  end interface

  type, extends(shape) :: square
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

  ! Binding forms: one binding calling another, `non_overridable`, the passed object not first
  ! (`pass(self)`), a generic binding of two specifics.
  type :: gauge
    real :: v = 1
  contains
    procedure :: reading => gauge_reading
    procedure :: twice => gauge_twice
    procedure, non_overridable :: offset => gauge_offset
    procedure, pass(self) :: scaled => gauge_scaled
    procedure :: plus_real => gauge_plus_real
    procedure :: plus_int => gauge_plus_int
    generic :: plus => plus_real, plus_int
  end type

  type, extends(gauge) :: fine_gauge
  contains
    procedure :: reading => fine_reading
  end type

contains
  real function gauge_reading(self)
    !$omp declare target
    class(gauge), intent(in) :: self
    gauge_reading = self%v
  end function

  real function fine_reading(self)
    !$omp declare target
    class(fine_gauge), intent(in) :: self
    fine_reading = self%v * 10
  end function

  real function gauge_twice(self)
    !$omp declare target
    class(gauge), intent(in) :: self
    gauge_twice = 2 * self%reading()
  end function

  real function gauge_offset(self)
    !$omp declare target
    class(gauge), intent(in) :: self
    gauge_offset = self%v + 100
  end function

  real function gauge_scaled(by, self)
    !$omp declare target
    real, intent(in) :: by
    class(gauge), intent(in) :: self
    gauge_scaled = by * self%reading()
  end function

  real function gauge_plus_real(self, x)
    !$omp declare target
    class(gauge), intent(in) :: self
    real, intent(in) :: x
    gauge_plus_real = self%reading() + x
  end function

  real function gauge_plus_int(self, n)
    !$omp declare target
    class(gauge), intent(in) :: self
    integer, intent(in) :: n
    gauge_plus_int = self%reading() + 1000 * n
  end function

  real function square_area(self)
    !$omp declare target
    class(square), intent(in) :: self
    call count(1)
    square_area = self%side ** 2
  end function

  real function cube_area(self)
    !$omp declare target
    class(cube), intent(in) :: self
    call count(2)
    cube_area = 6 * self%side ** 2
  end function

  real function tesseract_area(self)
    !$omp declare target
    class(tesseract), intent(in) :: self
    call count(3)
    tesseract_area = 24 * self%side ** 2
  end function

  subroutine square_grow(self, by)
    !$omp declare target
    class(square), intent(inout) :: self
    real, intent(in) :: by
    call count(1)
    self%side = self%side + by
  end subroutine

  subroutine tesseract_grow(self, by)
    !$omp declare target
    class(tesseract), intent(inout) :: self
    real, intent(in) :: by
    call count(3)
    self%side = self%side + 2 * by
  end subroutine
end module

program fortran_type_bound
  use counters
  use shapes
  implicit none
  integer, parameter :: n = 48
  integer :: checks = 0, failures = 0
  class(shape), allocatable :: s, t, many(:)
  class(shape), pointer :: p => null()
  class(gauge), allocatable :: g
  real :: forms(5)
  type(square), target :: plain
  type(tesseract), target :: big
  real :: a, b, areas(n)
  integer :: kind_seen, i, expected(counted)
  logical :: same, extends, extended_by

  ! One object of each extension, built on the host by allocate(..., source=...).
  allocate(s, source=cube(2.0))
  allocate(t, source=tesseract(1.0))
  a = 0
  b = 0
  kind_seen = 0
  !$omp target map(to: s, t) map(from: a, b, kind_seen)
  a = s%area()
  b = t%area()
  select type (t)
  type is (square)
    kind_seen = 1
  type is (cube)
    kind_seen = 2
  type is (tesseract)
    kind_seen = 3
  class default
    kind_seen = -1
  end select
  !$omp end target
  call check(a == 24.0, 'allocate(source=cube(2.0)): area', nint(a))
  call check(b == 24.0, 'allocate(source=tesseract(1.0)): area', nint(b))
  call check(kind_seen == 3, 'select type on the device chose the branch of type', kind_seen)
  call expect_calls('allocate(source=...)', [0, 1, 1])

  ! The type inquiries, on the device and on the host, on the same objects.
  same = .true.
  extends = .false.
  extended_by = .true.
  !$omp target map(to: s, t) map(from: same, extends, extended_by)
  same = same_type_as(s, t)
  extends = extends_type_of(t, s)
  extended_by = extends_type_of(s, t)
  !$omp end target
  call check(same .eqv. same_type_as(s, t), 'same_type_as(cube, tesseract) differs from the host''s', 0)
  call check(extends .eqv. extends_type_of(t, s), 'extends_type_of(tesseract, cube) differs from the host''s', 0)
  call check(extended_by .eqv. extends_type_of(s, t), 'extends_type_of(cube, tesseract) differs from the host''s', 0)

  ! A subroutine binding changes the object; it comes back.
  !$omp target map(tofrom: t)
  call t%grow(0.5)
  !$omp end target
  call check(t%side == 2.0, 'subroutine binding tesseract_grow: side * 10', nint(10 * t%side))
  call expect_calls('subroutine binding', [0, 0, 1])

  ! A polymorphic array, one binding call per element in a teams loop.
  allocate(cube :: many(n))
  do i = 1, n
    many(i)%side = real(i)
  end do
  areas = 0
  !$omp target teams distribute parallel do map(to: many) map(from: areas)
  do i = 1, n
    areas(i) = many(i)%area()
  end do
  do i = 1, n
    call check(areas(i) == 6.0 * i * i, 'polymorphic array: element', i)
  end do
  call expect_calls('polymorphic array in a teams loop', [0, n, 0])

  ! A class(shape) pointer, re-pointed between regions at objects of two types.
  plain%side = 3.0
  big%side = 1.0
  !$omp target enter data map(to: plain, big)
  p => plain
  a = 0
  !$omp target map(to: p) map(from: a)
  a = p%area()
  !$omp end target
  call check(a == 9.0, 'pointer at a square: area', nint(a))
  p => big
  a = 0
  !$omp target map(to: p) map(from: a)
  a = p%area()
  !$omp end target
  call check(a == 24.0, 'pointer re-pointed at a tesseract: area', nint(a))
  !$omp target exit data map(release: plain, big)
  call expect_calls('re-pointed pointer', [1, 0, 1])

  ! Binding forms on an extension's object, against the host's answers.
  allocate(g, source=fine_gauge(4.0))
  forms = 0
  !$omp target map(to: g) map(from: forms)
  forms(1) = g%twice()
  forms(2) = g%offset()
  forms(3) = g%scaled(0.5)
  forms(4) = g%plus(0.25)
  forms(5) = g%plus(2)
  !$omp end target
  call check(forms(1) == g%twice(), 'a binding calling a binding: 10 * result', nint(10 * forms(1)))
  call check(forms(2) == g%offset(), 'a non_overridable binding: result', nint(forms(2)))
  call check(forms(3) == g%scaled(0.5), 'pass(self) not first: result', nint(forms(3)))
  call check(forms(4) == g%plus(0.25), 'a generic binding, real specific: 100 * result', nint(100 * forms(4)))
  call check(forms(5) == g%plus(2), 'a generic binding, integer specific: result', nint(forms(5)))

  print '(a, ": ", i0, " checks, ", i0, " failed")', 'fortran_type_bound', checks, failures
  if (failures /= 0) stop 1

contains
#include "fortran_checks.inc"
end program
