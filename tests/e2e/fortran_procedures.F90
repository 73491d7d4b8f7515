! Fortran procedure pointers called on the device: the device copies of the procedures must run.
! flang cannot mark a procedure `declare target ... indirect` yet; each procedure is named through
! the project's `omptarget_indirect` module instead (a variable of type `indirect` holding it,
! declared target), which the pass plugin turns into the indirect offload entry the clause would
! give. Without the plugin (or without naming) device code calls the host addresses: the strict
! device stops the program, the x86_64 device runs the host copies, which the counters catch.
!
! Shapes: a procedure pointer variable, an array of derived types with procedure-pointer
! components chosen per iteration in a `target teams distribute parallel do`, a procedure pointer
! passed to a device procedure, `c_funptr` / `c_f_procpointer`, procedures of two modules. Each
! callee counts its calls in its own image's copy of `calls` and checks `omp_is_initial_device()`.
!
! Compiled with -DWITHOUT_NAMING, the procedures are not named (a negative control).

#define COUNTED_NAMES [character(len=8) :: 'twice', 'square', 'negate', 'add_ten', 'triple']
#include "fortran_counters.inc"

! The first module of callees.
module arithmetic
  use counters, only: count
#ifndef WITHOUT_NAMING
  use omptarget_indirect, only: indirect
#endif
  implicit none
#ifndef WITHOUT_NAMING
  type(indirect) :: twice_indirect = indirect(twice), square_indirect = indirect(square)
  !$omp declare target(twice_indirect, square_indirect)
#endif
contains
  integer function twice(x)
    !$omp declare target
    integer, intent(in) :: x
    call count(1)
    twice = 2 * x
  end function

  integer function square(x)
    !$omp declare target
    integer, intent(in) :: x
    call count(2)
    square = x * x
  end function
end module

! The second module of callees, and a device procedure that calls what it is given.
module more_arithmetic
  use counters, only: count
#ifndef WITHOUT_NAMING
  use omptarget_indirect, only: indirect
#endif
  implicit none
#ifndef WITHOUT_NAMING
  type(indirect) :: negate_indirect = indirect(negate), add_ten_indirect = indirect(add_ten)
  type(indirect) :: triple_indirect = indirect(triple)
  !$omp declare target(negate_indirect, add_ten_indirect, triple_indirect)
#endif
  abstract interface
    integer function unary(x)
      integer, intent(in) :: x
    end function
  end interface
  type :: operation
    procedure(unary), pointer, nopass :: apply => null()
  end type
contains
  integer function negate(x)
    !$omp declare target
    integer, intent(in) :: x
    call count(3)
    negate = -x
  end function

  integer function add_ten(x)
    !$omp declare target
    integer, intent(in) :: x
    call count(4)
    add_ten = x + 10
  end function

  integer function triple(x)
    !$omp declare target
    integer, intent(in) :: x
    call count(5)
    triple = 3 * x
  end function

  ! A device procedure given a procedure pointer.
  integer function apply_twice(f, x)
    !$omp declare target
    procedure(unary), pointer, intent(in) :: f
    integer, intent(in) :: x
    apply_twice = f(f(x))
  end function
end module

program fortran_procedures
  use, intrinsic :: iso_c_binding, only: c_funptr, c_funloc, c_f_procpointer
  use counters
  use arithmetic
  use more_arithmetic
  implicit none
  integer, parameter :: n = 64
  integer :: checks = 0, failures = 0
  procedure(unary), pointer :: p => null(), q => null()
  type(operation) :: ops(4)
  type(c_funptr) :: cp
  integer :: r(n), single, nested, through_c, i, expected(counted)

  ! A procedure pointer variable, mapped as a value.
  p => twice
  single = 0
  !$omp target map(to: p) map(from: single)
  single = p(21)
  !$omp end target
  call check(single == 42, 'procedure pointer variable: p(21) gave', single)
  expected = 0
  expected(1) = 1
  call expect_calls('procedure pointer variable', expected)

  ! An array of derived types with procedure-pointer components, chosen per iteration.
  ops(1)%apply => twice
  ops(2)%apply => square
  ops(3)%apply => negate
  ops(4)%apply => add_ten
  r = 0
  !$omp target teams distribute parallel do map(to: ops) map(from: r)
  do i = 1, n
    r(i) = ops(mod(i, 4) + 1)%apply(i)
  end do
  do i = 1, n
    call check(r(i) == reference(mod(i, 4) + 1, i), 'array of operations: element', i)
  end do
  expected = [n / 4, n / 4, n / 4, n / 4, 0]
  call expect_calls('array of operations in a teams loop', expected)

  ! A procedure pointer passed to a device procedure, which calls it twice.
  p => triple
  nested = 0
  !$omp target map(to: p) map(from: nested)
  nested = apply_twice(p, 2)
  !$omp end target
  call check(nested == 18, 'passed to a device procedure: apply_twice(triple, 2) gave', nested)
  expected = 0
  expected(5) = 2
  call expect_calls('passed to a device procedure', expected)

  ! A C function pointer, turned back into a procedure pointer on the device (mapped explicitly:
  ! flang maps an implicitly captured c_funptr as alloc).
  cp = c_funloc(square)
  through_c = 0
  !$omp target map(to: cp) map(from: through_c)
  call c_f_procpointer(cp, q)
  through_c = q(7)
  !$omp end target
  call check(through_c == 49, 'c_funptr and c_f_procpointer: square(7) gave', through_c)
  expected = 0
  expected(2) = 1
  call expect_calls('c_funptr and c_f_procpointer', expected)

  print '(a, ": ", i0, " checks, ", i0, " failed")', 'fortran_procedures', checks, failures
  if (failures /= 0) stop 1

contains
  integer function reference(op, x)
    integer, intent(in) :: op, x
    select case (op)
    case (1)
      reference = 2 * x
    case (2)
      reference = x * x
    case (3)
      reference = -x
    case default
      reference = x + 10
    end select
  end function

#include "fortran_checks.inc"
end program
