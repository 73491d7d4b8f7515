! Type-bound procedures written as people write them, called in target regions: the bindings'
! procedures are ordinary module procedures of a module compiled apart
! (`fortran_bindings_lib.F90`), none `!$omp declare target`, on polymorphic objects the host
! built. Each must run its device copy (the counters say which ran where), on the shapes users
! write: allocate(source=) of an abstract type's extensions three levels down, a subroutine
! binding that changes the object, a polymorphic array in a teams loop and a section of it, a
! class pointer re-pointed between regions, an extension with a component of its own, an
! implicitly mapped object, and on a meter's extension a binding calling another, a
! `non_overridable` one, one whose passed object is second, a generic binding, and procedures
! reading a constant table through a procedure without a binding.
!
! `./fortran_bindings unbound`: a binding of `hexagon`, whose procedure writes with flang's I/O
! runtime (which the device does not have), called on the device: it has no device copy, and the
! stub says which binding and why, and traps.

#ifndef PROGRAM_NAME
#define PROGRAM_NAME "fortran_bindings"
#endif

program fortran_bindings
  use counters
  use polygons
  implicit none
  integer, parameter :: n = 48
  integer :: checks = 0, failures = 0
  class(figure), allocatable :: s, t, u, w, many(:)
  class(figure), pointer :: p => null()
  class(meter), allocatable :: g
  type(square), target :: plain
  type(tesseract), target :: big
  real :: a, b, areas(n), forms(6)
  integer :: kind_seen, i
  character(len=16) :: mode

  call get_command_argument(1, mode)
  if (mode == 'unbound') then
    allocate(s, source=hexagon(1.0))
    a = 0
    !$omp target map(to: s) map(from: a)
    a = s%area()
    !$omp end target
    print '(a, f0.3)', 'the unbound binding returned ', a
    stop 1
  end if

  ! One object of each of two extensions, built by allocate(..., source=...).
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
  call expect_calls('allocate(source=...)', [0, 1, 1, 0, 0])

  ! A subroutine binding changes the object; it comes back.
  !$omp target map(tofrom: t)
  call t%grow(0.5)
  !$omp end target
  call check(t%side == 2.0, 'subroutine binding tesseract_grow: side * 10', nint(10 * t%side))
  call expect_calls('subroutine binding', [0, 0, 1, 0, 0])

  ! A polymorphic array, one binding call per element in a teams loop; then a section of it.
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
  call expect_calls('polymorphic array in a teams loop', [0, n, 0, 0, 0])
  areas = 0
  !$omp target teams distribute parallel do map(to: many(n/4+1:n/2)) map(tofrom: areas)
  do i = n/4 + 1, n/2
    areas(i) = many(i)%area()
  end do
  do i = 1, n
    if (i > n/4 .and. i <= n/2) then
      call check(areas(i) == 6.0 * i * i, 'section of a polymorphic array: element', i)
    else
      call check(areas(i) == 0, 'section of a polymorphic array: element outside it written', i)
    end if
  end do
  call expect_calls('section of a polymorphic array', [0, n/4, 0, 0, 0])

  ! A class(figure) pointer, re-pointed between regions at objects of two types.
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
  call expect_calls('re-pointed pointer', [1, 0, 1, 0, 0])

  ! An extension with a component of its own, and an object mapped implicitly.
  allocate(u, source=prism(side=2.0, height=3.0))
  allocate(w, source=square(5.0))
  a = 0
  b = 0
  !$omp target map(to: u) map(from: a)
  a = u%area()
  !$omp end target
  !$omp target map(from: b)
  b = w%area()
  !$omp end target
  call check(a == 32.0, 'an extension''s own component (prism%height): area', nint(a))
  call check(b == 25.0, 'an implicitly mapped square: area', nint(b))
  call expect_calls('own component, implicit map', [1, 0, 0, 1, 0])

  ! Binding forms on an extension's object.
  allocate(g, source=fine_meter(v=4.0, weight=3))
  forms = 0
  !$omp target map(to: g) map(from: forms)
  forms(1) = g%reading()
  forms(2) = g%twice()
  forms(3) = g%offset()
  forms(4) = g%scaled(0.5)
  forms(5) = g%plus(0.25)
  forms(6) = g%plus(2)
  !$omp end target
  call check(forms(1) == 8.125, 'an overriding binding reading a constant table: 1000 * result', &
             nint(1000 * forms(1)))
  call check(forms(2) == 16.25, 'a binding calling a binding: 1000 * result', nint(1000 * forms(2)))
  call check(forms(3) == 104.0, 'a non_overridable binding: result', nint(forms(3)))
  call check(forms(4) == 4.0625, 'pass(self) second: 10000 * result', nint(10000 * forms(4)))
  call check(forms(5) == 4.25, 'a generic binding, real specific: 100 * result', nint(100 * forms(5)))
  call check(forms(6) == 24.0, 'a generic binding, integer specific: result', nint(forms(6)))
  call expect_calls('binding forms', [0, 0, 0, 0, 3])

  print '(a, ": ", i0, " checks, ", i0, " failed")', PROGRAM_NAME, checks, failures
  if (failures /= 0) stop 1

contains
#include "fortran_checks.inc"
end program
