! Extensions with components of their own, mapped through a polymorphic object the host built:
! the device must read (and write back) the extension's components, which flang 23.1.4 leaves
! out (it maps a `class(...)` object with its declared type's size); the pass plugin in the host
! compile maps the dynamic type's size (docs/fortran.md).
!
! Shapes: `map(to:)` and `map(tofrom:)` of a `class(shape), allocatable` holding a `circle` and a
! `sphere` (an extension of an extension), a `class(shape), pointer` re-pointed between regions,
! `target enter/exit data`, a module routine's region over its `class(shape)` dummy argument, an
! implicit map, read by `select type` and by a type-bound function; a polymorphic array of
! spheres in a teams loop, a section of it written back, `target enter/exit data` of it; a
! derived type's `class(shape)` components (the first and a later one) mapped with the object,
! in the program and in a routine's region over its dummy argument.
!
! Extensions with allocatable components of their own (a `disc`'s `weights(:)`, a `tile`'s
! `marks(:)` besides the `weights` it inherits, a `cluster`'s `class(shape)` component holding a
! disc): their data is mapped with the object, so that what the device writes in a `map(to:)`
! region stays on the device, `target update` moves it, and `map(from:)` brings it back; as a
! scalar, an element of a polymorphic array, and a holder's component.
!
! A derived type's `class(shape), allocatable` array component (a `bag`'s `items(:)`), holding
! spheres and then discs with weights of their own: read and written back with the object that
! holds it, in the program and in a routine's region over a dummy argument, and by `target
! enter/exit data`.
!
! `./fortran_extensions empty`: a `class(figure)` of an abstract type without components, holding
! a `ring`: flang's default mapper divides by the declared size, 0, and the host program died with
! SIGFPE at the map.

#define COUNTED_NAMES [character(len=6) :: 'circle', 'sphere']
#include "fortran_counters.inc"

module geometry
  use counters, only: count
  implicit none

  type :: shape
    integer :: id = 0
  contains
    procedure :: size_of => shape_size
  end type

  type, extends(shape) :: circle
    real :: r = 0
  contains
    procedure :: size_of => circle_size
  end type

  type, extends(circle) :: sphere
    real :: depth = 0
  contains
    procedure :: size_of => sphere_size
  end type

  type, abstract :: figure
  end type

  type, extends(circle) :: disc
    real, allocatable :: weights(:)
  contains
    procedure :: size_of => disc_size
  end type

  type, extends(disc) :: tile
    integer, allocatable :: marks(:)
  end type

  type, extends(shape) :: cluster
    class(shape), allocatable :: inner
  end type

  ! A derived type whose polymorphic components the default mapper maps.
  type :: holder
    class(shape), allocatable :: first
    integer :: tag = 0
    class(shape), allocatable :: second
  end type

  ! A derived type whose polymorphic array component its default mapper maps.
  type :: bag
    integer :: tag = 0
    class(shape), allocatable :: items(:)
  end type

  type, extends(figure) :: ring
    real :: inner = 0, outer = 0
  end type

contains
  ! A library routine's own region over the object its caller built (a dummy argument).
  subroutine stretch(s, by)
    class(shape), intent(inout) :: s
    real, intent(in) :: by
    !$omp target map(tofrom: s)
    select type (s)
    type is (circle)
      s%r = s%r * by
    type is (sphere)
      s%depth = s%depth * by
    end select
    !$omp end target
  end subroutine

  ! A routine's region over a holder's components.
  subroutine deepen(h, by)
    type(holder), intent(inout) :: h
    real, intent(in) :: by
    !$omp target map(tofrom: h)
    select type (second => h%second)
    type is (sphere)
      second%depth = second%depth + by
    end select
    !$omp end target
  end subroutine

  ! A routine's region over a bag's items.
  subroutine widen(b, by)
    type(bag), intent(inout) :: b
    real, intent(in) :: by
    integer :: k
    !$omp target map(tofrom: b)
    select type (items => b%items)
    type is (sphere)
      do k = 1, size(items)
        items(k)%depth = items(k)%depth + by
      end do
    end select
    !$omp end target
  end subroutine

  real function shape_size(self)
    !$omp declare target
    class(shape), intent(in) :: self
    shape_size = -1
  end function

  real function circle_size(self)
    !$omp declare target
    class(circle), intent(in) :: self
    call count(1)
    circle_size = self%r
  end function

  real function disc_size(self)
    !$omp declare target
    class(disc), intent(in) :: self
    integer :: k
    ! Loops, not array intrinsics: a GPU image has no flang runtime to call.
    disc_size = self%r
    do k = 1, size(self%weights)
      disc_size = disc_size + self%weights(k)
    end do
  end function

  real function sphere_size(self)
    !$omp declare target
    class(sphere), intent(in) :: self
    call count(2)
    sphere_size = self%r + self%depth
  end function
end module

program fortran_extensions
  use counters
  use geometry
  implicit none
  integer :: checks = 0, failures = 0
  integer, parameter :: n = 32
  class(shape), allocatable :: s, t, many(:)
  type(holder) :: h
  real :: sizes(n)
  integer :: i
  class(shape), pointer :: p => null()
  class(figure), allocatable :: f
  type(circle), target :: small
  type(sphere), target :: ball
  real :: got, via_binding, width
  class(shape), allocatable :: d, discs(:)
  type(holder) :: h2
  integer :: marked
  character(len=16) :: mode

  call get_command_argument(1, mode)
  if (mode == 'empty') then
    allocate(f, source=ring(1.5, 4.0))
    width = 0
    !$omp target map(to: f) map(from: width)
    select type (f)
    type is (ring)
      width = f%outer - f%inner
    end select
    !$omp end target
    call check(width == 2.5, 'an abstract type without components holding a ring: width * 10', nint(10 * width))
    print '(a, ": ", i0, " checks, ", i0, " failed")', 'fortran_extensions', checks, failures
    if (failures /= 0) stop 1
    stop
  end if

  ! map(to:): the extension's component read by select type and by a binding.
  allocate(s, source=circle(7, 2.5))
  got = 0
  via_binding = 0
  !$omp target map(to: s) map(from: got, via_binding)
  select type (s)
  type is (circle)
    got = s%r
  end select
  via_binding = s%size_of()
  !$omp end target
  call check(got == 2.5, 'map(to:) of a circle: r * 10', nint(10 * got))
  call check(via_binding == 2.5, 'map(to:) of a circle, its binding: r * 10', nint(10 * via_binding))
  call expect_calls('map(to:) of a circle', [1, 0])

  ! map(tofrom:) of an extension of an extension: written on the device, seen on the host.
  allocate(t, source=sphere(8, 1.0, 0.5))
  !$omp target map(tofrom: t)
  select type (t)
  type is (sphere)
    t%r = t%r + 10
    t%depth = t%depth * 4
  end select
  !$omp end target
  select type (t)
  type is (sphere)
    call check(t%r == 11.0, 'map(tofrom:) of a sphere: r', nint(t%r))
    call check(t%depth == 2.0, 'map(tofrom:) of a sphere: depth', nint(t%depth))
  class default
    call check(.false., 'map(tofrom:) of a sphere: its type changed', 0)
  end select

  ! target enter/exit data, then a region that finds the object present.
  !$omp target enter data map(to: t)
  got = 0
  !$omp target map(from: got)
  got = t%size_of()
  !$omp end target
  !$omp target exit data map(delete: t)
  call check(got == 13.0, 'target enter data of a sphere, its binding: r + depth', nint(got))
  call expect_calls('target enter data', [0, 1])

  ! A class(shape) pointer re-pointed between regions at objects of two extensions.
  small%r = 3.0
  ball%r = 4.0
  ball%depth = 2.0
  p => small
  got = 0
  !$omp target map(to: p) map(from: got)
  got = p%size_of()
  !$omp end target
  call check(got == 3.0, 'pointer at a circle: r', nint(got))
  p => ball
  got = 0
  !$omp target map(to: p) map(from: got)
  got = p%size_of()
  !$omp end target
  call check(got == 6.0, 'pointer re-pointed at a sphere: r + depth', nint(got))
  call expect_calls('re-pointed pointer', [1, 1])

  ! A routine's region over its dummy argument.
  call stretch(s, 2.0)
  select type (s)
  type is (circle)
    call check(s%r == 5.0, 'a dummy argument (circle) mapped tofrom by a routine: r', nint(s%r))
  end select
  call stretch(t, 3.0)
  select type (t)
  type is (sphere)
    call check(t%depth == 6.0, 'a dummy argument (sphere) mapped tofrom by a routine: depth', nint(t%depth))
  end select

  ! An implicit map (no clause for s).
  got = 0
  !$omp target map(from: got)
  select type (s)
  type is (circle)
    got = s%r * 2
  end select
  !$omp end target
  call check(got == 10.0, 'implicit map of a circle: 2 r', nint(got))

  ! A polymorphic array of spheres: each element's own components, read in a teams loop.
  allocate(sphere :: many(n))
  do i = 1, n
    select type (e => many(i))
    type is (sphere)
      e%r = i
      e%depth = 0.5
    end select
  end do
  sizes = 0
  !$omp target teams distribute parallel do map(to: many) map(from: sizes)
  do i = 1, n
    sizes(i) = many(i)%size_of()
  end do
  do i = 1, n
    call check(sizes(i) == i + 0.5, 'polymorphic array of spheres: r + depth of element', i)
  end do
  call expect_calls('polymorphic array of spheres', [0, n])

  ! A section of it, written on the device and mapped back.
  !$omp target teams distribute parallel do map(tofrom: many(n/2+1:n))
  do i = n/2 + 1, n
    select type (e => many(i))
    type is (sphere)
      e%depth = e%depth + i
    end select
  end do
  do i = 1, n
    select type (e => many(i))
    type is (sphere)
      if (i > n/2) then
        call check(e%depth == i + 0.5, 'section of a polymorphic array mapped tofrom: depth of element', i)
      else
        call check(e%depth == 0.5, 'outside the section: depth of element', i)
      end if
    end select
  end do

  ! target enter/exit data of the array, with a region between that finds it present.
  !$omp target enter data map(to: many)
  sizes = 0
  !$omp target teams distribute parallel do map(from: sizes)
  do i = 1, n
    sizes(i) = many(i)%size_of()
  end do
  !$omp target exit data map(delete: many)
  call check(sizes(1) == 1.5 .and. sizes(n) == n + n + 0.5, 'target enter data of the array: r + depth', &
             nint(sizes(n)))
  call expect_calls('target enter data of the array', [0, n])

  ! A derived type's polymorphic components, mapped with the object that holds them.
  allocate(h%first, source=circle(1, 2.5))
  allocate(h%second, source=sphere(2, 1.0, 3.0))
  h%tag = 7
  got = 0
  via_binding = 0
  !$omp target map(tofrom: h) map(from: got, via_binding)
  got = h%first%size_of()
  via_binding = h%second%size_of()
  select type (second => h%second)
  type is (sphere)
    second%depth = second%depth * 2
  end select
  !$omp end target
  call check(got == 2.5, 'a holder''s first component (circle): r * 10', nint(10 * got))
  call check(via_binding == 4.0, 'a holder''s later component (sphere): r + depth', nint(via_binding))
  select type (second => h%second)
  type is (sphere)
    call check(second%depth == 6.0, 'a holder''s component written on the device: depth', nint(second%depth))
  end select
  call deepen(h, 1.0)
  select type (second => h%second)
  type is (sphere)
    call check(second%depth == 7.0, 'a routine''s region over a holder argument: depth', nint(second%depth))
  end select
  call expect_calls('a holder''s components', [1, 1])

  call allocatable_components()
  call array_components()

  print '(a, ": ", i0, " checks, ", i0, " failed")', 'fortran_extensions', checks, failures
  if (failures /= 0) stop 1

contains
  ! The data of an extension's allocatable components (the program's header).
  subroutine allocatable_components()
    real :: host_weight
    integer :: k

    ! map(to:): read on the device (by a binding and by select type); what the device writes
    ! stays there.
    allocate(d, source=disc(3, 1.0, [1.0, 2.0, 3.0]))
    got = 0
    via_binding = 0
    !$omp target map(to: d) map(from: got, via_binding)
    via_binding = d%size_of()
    select type (d)
    type is (disc)
      got = d%weights(3)
      d%weights(1) = 100
    end select
    !$omp end target
    call check(via_binding == 7.0, 'map(to:) of a disc, its binding: r + sum(weights)', nint(via_binding))
    call check(got == 3.0, 'map(to:) of a disc: weights(3)', nint(got))
    select type (d)
    type is (disc)
      call check(d%weights(1) == 1.0, 'map(to:) of a disc: the device''s write stays there, weights(1)', &
                 nint(d%weights(1)))
    end select

    ! map(tofrom:): written on the device, seen on the host.
    !$omp target map(tofrom: d)
    select type (d)
    type is (disc)
      do k = 1, size(d%weights)
        d%weights(k) = d%weights(k) * 2
      end do
      d%r = 5
    end select
    !$omp end target
    select type (d)
    type is (disc)
      call check(all(d%weights == [2.0, 4.0, 6.0]), 'map(tofrom:) of a disc: weights doubled, weights(3)', &
                 nint(d%weights(3)))
      call check(d%r == 5.0, 'map(tofrom:) of a disc: r', nint(d%r))
    end select

    ! target enter data: the device's copy is read until target update moves the host's.
    !$omp target enter data map(to: d)
    select type (d)
    type is (disc)
      d%weights(2) = 50
    end select
    got = 0
    !$omp target map(from: got)
    select type (d)
    type is (disc)
      got = d%weights(2)
    end select
    !$omp end target
    call check(got == 4.0, 'target enter data of a disc: the device''s copy, weights(2)', nint(got))
    !$omp target update to(d)
    got = 0
    !$omp target map(from: got)
    select type (d)
    type is (disc)
      got = d%weights(2)
      d%weights(3) = -6
    end select
    !$omp end target
    call check(got == 50.0, 'target update to of a disc: weights(2)', nint(got))
    !$omp target exit data map(from: d)
    select type (d)
    type is (disc)
      call check(d%weights(3) == -6.0, 'target exit data map(from:) of a disc: weights(3)', nint(d%weights(3)))
    end select

    ! An extension of an extension, with an allocatable component of its own and one inherited.
    deallocate(d)
    allocate(d, source=tile(4, 2.0, [0.5, 0.5], [3, 4, 5]))
    marked = 0
    via_binding = 0
    !$omp target map(to: d) map(from: marked, via_binding)
    via_binding = d%size_of()
    select type (d)
    type is (tile)
      marked = 0
      do k = 1, size(d%marks)
        marked = marked + d%marks(k)
      end do
      d%marks(1) = 0
      d%weights(1) = 0
    end select
    !$omp end target
    call check(marked == 12, 'map(to:) of a tile: sum(marks)', marked)
    call check(via_binding == 3.0, 'map(to:) of a tile, the binding it inherits: r + sum(weights)', &
               nint(via_binding))
    select type (d)
    type is (tile)
      call check(d%marks(1) == 3 .and. d%weights(1) == 0.5, &
                 'map(to:) of a tile: the device''s writes stay there, marks(1)', d%marks(1))
    end select

    ! An extension whose allocatable component is polymorphic itself, holding a disc.
    deallocate(d)
    allocate(d, source=cluster(5, disc(6, 1.0, [4.0, 4.0])))
    got = 0
    !$omp target map(to: d) map(from: got)
    select type (d)
    type is (cluster)
      got = d%inner%size_of()
      select type (inner => d%inner)
      type is (disc)
        inner%weights(2) = 0
      end select
    end select
    !$omp end target
    call check(got == 9.0, 'map(to:) of a cluster holding a disc: its binding, r + sum(weights)', nint(got))
    select type (d)
    type is (cluster)
      select type (inner => d%inner)
      type is (disc)
        call check(inner%weights(2) == 4.0, 'map(to:) of a cluster: the device''s write stays there', &
                   nint(inner%weights(2)))
      end select
    end select

    ! A polymorphic array of discs, each with its own weights, in a teams loop.
    allocate(disc :: discs(n))
    do i = 1, n
      select type (e => discs(i))
      type is (disc)
        e%r = i
        allocate(e%weights(i))
        e%weights = 1
      end select
    end do
    sizes = 0
    !$omp target teams distribute parallel do map(to: discs) map(from: sizes)
    do i = 1, n
      sizes(i) = discs(i)%size_of()
      select type (e => discs(i))
      type is (disc)
        e%weights(1) = -1
      end select
    end do
    do i = 1, n
      call check(sizes(i) == 2 * i, 'polymorphic array of discs: r + sum(weights) of element', i)
    end do
    select type (e => discs(n))
    type is (disc)
      call check(e%weights(1) == 1.0, 'polymorphic array of discs: the device''s writes stay there', &
                 nint(e%weights(1)))
    end select

    ! A holder's class(shape) component holding a disc.
    allocate(h2%first, source=disc(7, 0.5, [2.0, 2.0]))
    allocate(h2%second, source=circle(8, 1.0))
    got = 0
    host_weight = 0
    !$omp target map(tofrom: h2) map(from: got)
    got = h2%first%size_of()
    select type (first => h2%first)
    type is (disc)
      first%weights(2) = 10
    end select
    !$omp end target
    call check(got == 4.5, 'a holder''s component holding a disc: r + sum(weights), * 10', nint(10 * got))
    select type (first => h2%first)
    type is (disc)
      host_weight = first%weights(2)
    end select
    call check(host_weight == 10.0, 'a holder''s disc mapped tofrom: weights(2)', nint(host_weight))
  end subroutine

  ! A derived type's polymorphic array component (the program's header).
  subroutine array_components()
    integer, parameter :: m = 8
    type(bag) :: b
    real :: item_sizes(m), host_weight
    integer :: k

    allocate(sphere :: b%items(m))
    select type (items => b%items)
    type is (sphere)
      do k = 1, m
        items(k)%r = k
        items(k)%depth = 0.5
      end do
    end select
    b%tag = 9
    item_sizes = 0
    !$omp target map(tofrom: b) map(from: item_sizes)
    do k = 1, m
      item_sizes(k) = b%items(k)%size_of()
    end do
    select type (items => b%items)
    type is (sphere)
      items(m)%depth = 4
    end select
    b%tag = b%tag + 1
    !$omp end target
    do k = 1, m
      call check(item_sizes(k) == k + 0.5, 'a bag''s array of spheres: r + depth of item', k)
    end do
    call check(b%tag == 10, 'a bag mapped tofrom: its own component', b%tag)
    select type (items => b%items)
    type is (sphere)
      call check(items(m)%depth == 4.0, 'a bag''s array of spheres written on the device: depth of the last', &
                 nint(items(m)%depth))
    end select
    call expect_calls('a bag''s array of spheres', [0, m])
    call widen(b, 1.0)
    select type (items => b%items)
    type is (sphere)
      call check(items(1)%depth == 1.5 .and. items(m)%depth == 5.0, &
                 'a routine''s region over a bag argument: depth of the last', nint(items(m)%depth))
    end select

    ! Discs, each with weights of its own, in the bag.
    deallocate(b%items)
    allocate(disc :: b%items(m))
    select type (items => b%items)
    type is (disc)
      do k = 1, m
        items(k)%r = k
        allocate(items(k)%weights(2))
        items(k)%weights = [1.0, 2.0]
      end do
    end select
    item_sizes = 0
    !$omp target map(tofrom: b) map(from: item_sizes)
    do k = 1, m
      item_sizes(k) = b%items(k)%size_of()
    end do
    select type (items => b%items)
    type is (disc)
      items(m)%weights(2) = 20
    end select
    !$omp end target
    do k = 1, m
      call check(item_sizes(k) == k + 3, 'a bag''s array of discs: r + sum(weights) of item', k)
    end do
    host_weight = 0
    select type (items => b%items)
    type is (disc)
      host_weight = items(m)%weights(2)
    end select
    call check(host_weight == 20.0, 'a bag''s disc written on the device: weights(2) of the last', &
               nint(host_weight))

    ! target enter data: the device's copy of the bag is read until target exit data brings it
    ! back.
    !$omp target enter data map(to: b)
    select type (items => b%items)
    type is (disc)
      items(1)%weights(1) = 50
    end select
    got = 0
    !$omp target map(from: got)
    select type (items => b%items)
    type is (disc)
      got = items(1)%weights(1)
      items(m)%r = -8
    end select
    !$omp end target
    call check(got == 1.0, 'target enter data of a bag: the device''s copy, weights(1) of the first', nint(got))
    !$omp target exit data map(from: b)
    select type (items => b%items)
    type is (disc)
      call check(items(m)%r == -8.0, 'target exit data map(from:) of a bag: r of the last', nint(items(m)%r))
    end select
  end subroutine

#include "fortran_checks.inc"
end program
