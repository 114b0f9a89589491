// machine20.jr2's ring machine in Boost.MSM (the `boost-msm` arm of bench/run.sh's `dispatch`):
// the back-end boost/msm/back/state_machine.hpp over the front-end state_machine_def with the
// functor rows of boost/msm/front/functor_row.hpp, one MSM submachine for each compound state.
//
// How it maps machine20.jr2, level by level (20 states, as there):
//
//   machine ring { var count }   Ring, a state machine whose front-end holds `count`
//     state t_i { ... }          T<i>, a submachine (4 of them, t0 initial)
//       state m_i { a_i, b_i }   M<i>, a submachine of T<i> (its initial state)
//         a_i -> b_i on step     a row of M<i>: A<i> --Step / Inc--> B<i>
//         b_i -> k_i on step     leaves m_i: B<i> --Step / Inc--> M<i>'s exit pseudo state
//                                MExit<i>, whose exit point T<i> takes to K<i> (the UML way
//                                out of a submachine: MSM has no row from a nested state
//                                to a state outside its submachine)
//       state k_i                K<i>, a state of T<i>
//         k_i -> t_{i+1} if      leaves t_i: K<i> --Step [CountNonNegative] / Inc--> T<i>'s
//           count >= 0           exit pseudo state TExit<i>, whose exit point Ring takes to
//                                T<i+1> (entered at its initial m_{i+1}.a_{i+1})
//       on reset -> t0           a row of Ring: T<i> --Reset / Zero--> T<0> (external: t0 is
//         { count = 0 }          left and entered again, so it restarts at a0)
//
// Every action counts in the ring's `count`; the submachines point at it (MSM hands an action
// the machine whose table holds its row, not the outermost one). Each leaf carries two flags,
// its top state and its position, only so that leaf() can say where the machine is after the
// benchmark (is_flag_active; never read while it runs).
//
// The back-end's policies are MSM's defaults (a message queue, events processed inside a
// try/catch). An exit point forwards its event to the outer machine while that machine is still
// processing it, which the message queue is there to order: with `no_message_queue` in the
// front-ends this machine crashed in its first steps (Boost 1.74), and `no_exception_thrown`
// made no difference beyond the noise, so neither is used. The queue is part of what an event
// costs here: each exit point forwards its event through a boost::function and the queue.
#include "bench/dispatch/msm_machine.h"

// Boost 1.74's MSM includes headers Boost has since deprecated (boost/bind.hpp's global
// placeholders, boost/detail/no_exceptions_support.hpp), each announced by a #pragma message on
// every build: MSM still needs them, so they are allowed here, in this translation unit only.
#define BOOST_BIND_GLOBAL_PLACEHOLDERS
#define BOOST_ALLOW_DEPRECATED_HEADERS
// The flat ring's table has 24 rows; MPL's preprocessed vectors stop at 20.
#define BOOST_MPL_CFG_NO_PREPROCESSED_HEADERS
#define BOOST_MPL_LIMIT_VECTOR_SIZE 30
#define BOOST_MPL_LIMIT_MAP_SIZE 30

#include <boost/msm/back/state_machine.hpp>
#include <boost/msm/front/functor_row.hpp>
#include <boost/msm/front/state_machine_def.hpp>

namespace jr2bench {
namespace {

namespace msm = boost::msm;
namespace mpl = boost::mpl;
using msm::front::none;
using msm::front::Row;

struct Step {};
struct Reset {};

// Flags that name a leaf: its top state t_i and its place in t_i (a 0, b 1, k 2).
template <int I>
struct Top {};
template <int P>
struct Pos {};

// The actions and the guard, on the ring's count wherever the row is.
struct Inc {
  template <class E, class Fsm, class S, class T>
  void operator()(const E&, Fsm& fsm, S&, T&) const {
    ++*fsm.count;
  }
};
struct Zero {
  template <class E, class Fsm, class S, class T>
  void operator()(const E&, Fsm& fsm, S&, T&) const {
    *fsm.count = 0;
  }
};
struct CountNonNegative {
  template <class E, class Fsm, class S, class T>
  bool operator()(const E&, Fsm& fsm, S&, T&) const {
    return *fsm.count >= 0;
  }
};

template <int I, int P>
struct Leaf : msm::front::state<> {
  using flag_list = mpl::vector2<Top<I>, Pos<P>>;
};
template <int I>
using A = Leaf<I, 0>;
template <int I>
using B = Leaf<I, 1>;
template <int I>
using K = Leaf<I, 2>;
template <int I>
struct MExit : msm::front::exit_pseudo_state<Step> {};
template <int I>
struct TExit : msm::front::exit_pseudo_state<Step> {};

// m_i: a_i -> b_i -> out (to k_i).
template <int I>
struct MDef : msm::front::state_machine_def<MDef<I>> {
  int64_t* count = nullptr;
  using initial_state = A<I>;
  struct transition_table
      : mpl::vector2<Row<A<I>, Step, B<I>, Inc, none>, Row<B<I>, Step, MExit<I>, Inc, none>> {};
};
template <int I>
using M = msm::back::state_machine<MDef<I>>;

// t_i: m_i (then k_i through m_i's exit point), k_i -> out (to t_{i+1}).
template <int I>
struct TDef : msm::front::state_machine_def<TDef<I>> {
  int64_t* count = nullptr;
  using initial_state = M<I>;
  struct transition_table
      : mpl::vector2<Row<typename M<I>::template exit_pt<MExit<I>>, Step, K<I>, none, none>,
                     Row<K<I>, Step, TExit<I>, Inc, CountNonNegative>> {};
};
template <int I>
using T = msm::back::state_machine<TDef<I>>;

template <int I, int Next>
using Advance = Row<typename T<I>::template exit_pt<TExit<I>>, Step, T<Next>, none, none>;
template <int I>
using ResetRow = Row<T<I>, Reset, T<0>, Zero, none>;

struct RingDef : msm::front::state_machine_def<RingDef> {
  int64_t value = 0;
  int64_t* count = &value;
  using initial_state = T<0>;
  struct transition_table : mpl::vector8<Advance<0, 1>, Advance<1, 2>, Advance<2, 3>, Advance<3, 0>,
                                         ResetRow<0>, ResetRow<1>, ResetRow<2>, ResetRow<3>> {};
};
using Ring = msm::back::state_machine<RingDef>;

template <int I>
void Wire(Ring& ring) {
  T<I>& t = ring.get_state<T<I>&>();
  t.count = &ring.value;
  t.template get_state<M<I>&>().count = &ring.value;
}

// The same ring flat (MsmFlatRing): its twelve leaves as the states of one machine, with MSM's
// defaults, as a user who does not need submachines would write it. a_i -> b_i -> k_i on step,
// k_i -> a_{i+1} on step if count >= 0, every leaf -> a_0 on reset (count = 0), each counting.
struct FlatDef : msm::front::state_machine_def<FlatDef> {
  int64_t value = 0;
  int64_t* count = &value;
  using initial_state = A<0>;
  struct transition_table
      : mpl::vector<Row<A<0>, Step, B<0>, Inc, none>, Row<B<0>, Step, K<0>, Inc, none>,
                    Row<K<0>, Step, A<1>, Inc, CountNonNegative>, Row<A<1>, Step, B<1>, Inc, none>,
                    Row<B<1>, Step, K<1>, Inc, none>, Row<K<1>, Step, A<2>, Inc, CountNonNegative>,
                    Row<A<2>, Step, B<2>, Inc, none>, Row<B<2>, Step, K<2>, Inc, none>,
                    Row<K<2>, Step, A<3>, Inc, CountNonNegative>, Row<A<3>, Step, B<3>, Inc, none>,
                    Row<B<3>, Step, K<3>, Inc, none>, Row<K<3>, Step, A<0>, Inc, CountNonNegative>,
                    Row<A<0>, Reset, A<0>, Zero, none>, Row<B<0>, Reset, A<0>, Zero, none>,
                    Row<K<0>, Reset, A<0>, Zero, none>, Row<A<1>, Reset, A<0>, Zero, none>,
                    Row<B<1>, Reset, A<0>, Zero, none>, Row<K<1>, Reset, A<0>, Zero, none>,
                    Row<A<2>, Reset, A<0>, Zero, none>, Row<B<2>, Reset, A<0>, Zero, none>,
                    Row<K<2>, Reset, A<0>, Zero, none>, Row<A<3>, Reset, A<0>, Zero, none>,
                    Row<B<3>, Reset, A<0>, Zero, none>, Row<K<3>, Reset, A<0>, Zero, none>> {};
};
using Flat = msm::back::state_machine<FlatDef>;

template <class Machine>
int LeafOf(const Machine& m) {
  const auto active = [&](auto flag) {
    return const_cast<Machine&>(m).template is_flag_active<decltype(flag)>() ? 1 : 0;
  };
  const int tops[] = {active(Top<0>{}), active(Top<1>{}), active(Top<2>{}), active(Top<3>{})};
  const int places[] = {active(Pos<0>{}), active(Pos<1>{}), active(Pos<2>{})};
  int top = -1;
  int place = -1;
  for (int i = 0; i < 4; ++i) {
    if (tops[i] == 0) continue;
    if (top >= 0) return -1;
    top = i;
  }
  for (int p = 0; p < 3; ++p) {
    if (places[p] == 0) continue;
    if (place >= 0) return -1;
    place = p;
  }
  return top < 0 || place < 0 ? -1 : top * 3 + place;
}

}  // namespace

struct MsmFlatRing::Impl {
  Flat ring;
};

MsmFlatRing::MsmFlatRing() : impl_(std::make_unique<Impl>()) {
  impl_->ring.count = &impl_->ring.value;  // not the default's: the back-end copied the front
  impl_->ring.start();
}

MsmFlatRing::~MsmFlatRing() = default;

void MsmFlatRing::step() { impl_->ring.process_event(Step{}); }
void MsmFlatRing::reset() { impl_->ring.process_event(Reset{}); }
int64_t MsmFlatRing::count() const { return impl_->ring.value; }
int MsmFlatRing::leaf() const { return LeafOf(impl_->ring); }

struct MsmRing::Impl {
  Ring ring;
};

MsmRing::MsmRing() : impl_(std::make_unique<Impl>()) {
  Ring& ring = impl_->ring;
  ring.count = &ring.value;  // not the default's: the back-end may have copied the front-end
  Wire<0>(ring);
  Wire<1>(ring);
  Wire<2>(ring);
  Wire<3>(ring);
  ring.start();
}

MsmRing::~MsmRing() = default;

void MsmRing::step() { impl_->ring.process_event(Step{}); }
void MsmRing::reset() { impl_->ring.process_event(Reset{}); }
int64_t MsmRing::count() const { return impl_->ring.value; }

int MsmRing::leaf() const { return LeafOf(impl_->ring); }

}  // namespace jr2bench
