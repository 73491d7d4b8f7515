! The driver of the module library fortran_modules_lib.F90, compiled apart from it: it builds the
! objects, calls the library's routines (whose target regions use them), and calls the library's
! procedures in target regions of its own, through a procedure-pointer component and (with
! -DTYPE_BOUND, flang 23) type-bound procedures of a polymorphic object.

program fortran_modules
  use counters
  use fluxes
  implicit none
  integer, parameter :: n = 33
  integer :: checks = 0, failures = 0, i, expected(counted)
  type(scheme) :: s
  real :: u(n), faces(n - 1), single
#ifdef TYPE_BOUND
  class(cell), allocatable :: c
  real :: dt
#endif

  do i = 1, n
    u(i) = real(i * i)
  end do

  ! The library's region, the driver's scheme.
  s%f => central
  s%weight = 2
  call face_fluxes(s, u, faces, n)
  do i = 1, n - 1
    call check(faces(i) == u(i) + u(i + 1), 'the library''s region, central fluxes: face', i)
  end do
  expected = 0
  expected(2) = n - 1
  call expect_calls('the library''s region with the driver''s scheme', expected)

  ! The driver's region, the library's procedure.
  s%f => upwind
  single = 0
  !$omp target map(to: s, u) map(from: single)
  single = s%f(u(3), u(4))
  !$omp end target
  call check(single == u(3), 'the driver''s region, upwind flux', int(single))
  expected = 0
  expected(1) = 1
  call expect_calls('the driver''s region with the library''s procedure', expected)

#ifdef TYPE_BOUND
  allocate(wet_cell :: c)
  c%h = 8
  dt = 0
  !$omp target map(to: c) map(from: dt)
  dt = c%dt()
  !$omp end target
  call check(dt == 2, 'the driver''s region, a wet cell''s time step (x4)', int(dt * 4))
  expected = 0
  expected(4) = 1
  call expect_calls('the driver''s region, a type-bound procedure of the library', expected)

  deallocate(c)
  allocate(cell :: c)
  c%h = 8
  call time_step(c, dt)
  call check(dt == 4, 'the library''s region, a dry cell''s time step', int(dt))
  expected = 0
  expected(3) = 1
  call expect_calls('the library''s region, the driver''s polymorphic object', expected)
#endif

  print '(a, ": ", i0, " checks, ", i0, " failed")', PROGRAM_NAME, checks, failures
  if (failures /= 0) stop 1

contains
#include "fortran_checks.inc"
end program
