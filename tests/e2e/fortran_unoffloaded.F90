! Type-bound procedures beside a module compiled without offloading (`fortran_unoffloaded_lib.F90`,
! built with `--offload-host-only`). This file's own module, `tanks` (an abstract type and two
! levels of extension, the bindings' procedures ordinary module procedures), runs on the device
! on objects the host built; the other module's type is used on the host only.
!
! `./fortran_unoffloaded unoffloaded`: a binding of the other module's type called on the device,
! where no device procedure for it exists; the call must stop with one line that names the
! binding, its type and what to do.

#define COUNTED_NAMES [character(len=8) :: 'box', 'tall_box']
#include "fortran_counters.inc"

module tanks
  use counters, only: count
  implicit none
  type, abstract :: tank
  contains
    procedure(volume_of), deferred :: volume
  end type
  abstract interface
    real function volume_of(self)
      import :: tank
      class(tank), intent(in) :: self
    end function
  end interface
  type, extends(tank) :: box
    real :: side = 1
  contains
    procedure :: volume => box_volume
  end type
  type, extends(box) :: tall_box
    real :: height = 1
  contains
    procedure :: volume => tall_box_volume
  end type
contains
  real function box_volume(self)
    class(box), intent(in) :: self
    call count(1)
    box_volume = self%side ** 3
  end function
  real function tall_box_volume(self)
    class(tall_box), intent(in) :: self
    call count(2)
    tall_box_volume = self%side ** 2 * self%height
  end function
end module

program fortran_unoffloaded
  use counters
  use gauges
  use tanks
  implicit none
  integer :: checks = 0, failures = 0
  class(tank), allocatable :: small, large
  class(gauge), allocatable :: meter
  real :: small_volume, large_volume, reading
  character(len=16) :: mode

  call get_command_argument(1, mode)
  if (mode == 'unoffloaded') then
    allocate(meter, source=gauge(3.0))
    reading = 0
    !$omp target map(to: meter) map(from: reading)
    reading = meter%reading()
    !$omp end target
    print '(a, f0.3)', 'the binding of the module compiled without offloading returned ', reading
    stop 1
  end if

  allocate(small, source=box(2.0))
  allocate(large, source=tall_box(2.0, 5.0))
  small_volume = 0
  large_volume = 0
  !$omp target map(to: small, large) map(from: small_volume, large_volume)
  small_volume = small%volume()
  large_volume = large%volume()
  !$omp end target
  call check(small_volume == 8.0, 'a box''s volume on the device', nint(small_volume))
  call check(large_volume == 20.0, 'a tall box''s volume on the device', nint(large_volume))
  call expect_calls('volumes', [1, 1])

  ! The host's own calls of the other module's bindings are the host's.
  allocate(meter, source=gauge(3.0))
  reading = meter%reading()
  call check(reading == 6.0, 'a gauge''s reading on the host', nint(reading))

  print '(a, ": ", i0, " checks, ", i0, " failed")', 'fortran_unoffloaded', checks, failures
  if (failures /= 0) stop 1

contains
#include "fortran_checks.inc"
end program
