! A module compiled without offloading (the suite builds it with `--offload-host-only`), as a
! library built before its code was ported, or by someone else: its procedures have no device
! code at all. `fortran_unoffloaded.F90` uses its type.

module gauges
  implicit none
  type :: gauge
    real :: level = 0
  contains
    procedure :: reading => gauge_reading
  end type
contains
  real function gauge_reading(self)
    class(gauge), intent(in) :: self
    gauge_reading = 2 * self%level
  end function
end module
