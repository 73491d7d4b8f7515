! A Fortran module library in the shape HPC codes have, compiled apart from its driver
! (fortran_modules.F90) as its own file, a static archive or a shared library with its own device
! image: derived types with a procedure-pointer component and, with -DTYPE_BOUND (flang 23), with
! type-bound procedures over an extension (ordinary module procedures, no `declare target`:
! the pass plugin copies them from the host compile); library routines with their own target regions over
! objects the driver built. Each device copy counts its calls (fortran_counters.inc); the driver
! checks the counts.
!
! Compiled with -DWITHOUT_NAMING, the procedures are not named (a negative control).

#define COUNTED_NAMES [character(len=8) :: 'upwind', 'central', 'cell_dt', 'wet_dt']
#include "fortran_counters.inc"

module fluxes
  use counters, only: count
#ifndef WITHOUT_NAMING
  use omptarget_indirect, only: indirect
#endif
  implicit none
  abstract interface
    real function flux(left, right)
      real, intent(in) :: left, right
    end function
  end interface

  ! A numerical scheme the driver picks: a procedure-pointer component.
  type :: scheme
    procedure(flux), pointer, nopass :: f => null()
    real :: weight = 1
  end type

#ifndef WITHOUT_NAMING
  type(indirect) :: upwind_indirect = indirect(upwind), central_indirect = indirect(central)
  !$omp declare target(upwind_indirect, central_indirect)
#endif

#ifdef TYPE_BOUND
  ! A cell's time step: a type-bound procedure, overridden by the extension.
  type :: cell
    real :: h = 0
  contains
    procedure :: dt => cell_dt
  end type

  type, extends(cell) :: wet_cell
  contains
    procedure :: dt => wet_dt
  end type
#endif

contains
  real function upwind(left, right)
    !$omp declare target
    real, intent(in) :: left, right
    call count(1)
    upwind = left
  end function

  real function central(left, right)
    !$omp declare target
    real, intent(in) :: left, right
    call count(2)
    central = (left + right) / 2
  end function

  ! The library's own target region over the driver's scheme and field.
  subroutine face_fluxes(s, u, faces, n)
    type(scheme), intent(in) :: s
    integer, intent(in) :: n
    real, intent(in) :: u(n)
    real, intent(out) :: faces(n - 1)
    integer :: i
    !$omp target teams distribute parallel do map(to: s, u) map(from: faces)
    do i = 1, n - 1
      faces(i) = s%weight * s%f(u(i), u(i + 1))
    end do
  end subroutine

#ifdef TYPE_BOUND
  real function cell_dt(self)
    class(cell), intent(in) :: self
    call count(3)
    cell_dt = self%h / 2
  end function

  real function wet_dt(self)
    class(wet_cell), intent(in) :: self
    call count(4)
    wet_dt = self%h / 4
  end function

  ! The library's own target region over a polymorphic object the driver allocated.
  subroutine time_step(c, dt)
    class(cell), intent(in) :: c
    real, intent(out) :: dt
    !$omp target map(to: c) map(from: dt)
    dt = c%dt()
    !$omp end target
  end subroutine
#endif
end module
