! The shortest Fortran program that needs omptarget-indirect (README, "Use it"): a procedure
! named through the `omptarget_indirect` module, called on the device through a procedure pointer
! the host set. The device copy returns 2*x, a host copy 2*x + 1000. Prints "ok" and ends
! normally only when the device copy ran.
module procedures
  use omptarget_indirect, only: indirect
  implicit none
  type(indirect) :: twice_indirect = indirect(twice)
  !$omp declare target(twice_indirect)
contains
  integer function twice(x)
    use omp_lib, only: omp_is_initial_device
    !$omp declare target
    integer, intent(in) :: x
    twice = 2 * x
    if (omp_is_initial_device()) twice = twice + 1000
  end function
end module

program procedure_pointers
  use procedures
  implicit none
  procedure(twice), pointer :: p
  integer :: r
  p => twice
  r = 0
  !$omp target map(to: p) map(from: r)
  r = p(5)
  !$omp end target
  if (r /= 10) then
    print '(a, i0, a)', 'twice(5) = ', r, ': FAILED (a host copy ran)'
    error stop 1
  end if
  print '(a, i0, a)', 'twice(5) = ', r, ': ok'
end program
