// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cerrno>
#include <memory>
#include <string>

#include "bpf_runtime/shared_maps.hpp"
#include "bpf_runtime/start_turn.hpp"
#include "bpf_runtime/uprobe_links.hpp"
#include "pyebpf/error.hpp"

namespace pyebpf::bpf {

// A bpftool-generated skeleton (<name>_bpf__open/__load/__destroy) as one
// RAII object: the lifecycle every tracker follows is open (constructor) ->
// set rodata, autoload and map sizes -> load() -> attach. Destroying it
// detaches and frees everything the skeleton holds.
template <typename S>
class Skeleton {
 public:
  struct Functions {
    S* (*open)();
    int (*load)(S*);
    void (*destroy)(S*);
  };

  Skeleton() = default;
  // Opens the object; throws pyebpf::Error naming `owner` (the tracker).
  Skeleton(std::string owner, Functions functions)
      : owner_(std::move(owner)), skel_(functions.open(), functions.destroy), load_(functions.load) {
    if (!skel_) throw Error(errno_text(owner_ + ": open BPF object", errno));
  }

  // Loads (verifies) the configured object with the maps every object shares
  // (py_procs, py_tstates) reused from `shared`, its per-process uprobe
  // programs made for the links this kernel offers. `detail` is added to
  // the error, e.g. which hook flavour failed. Other trackers may start
  // meanwhile (start_turn.hpp).
  void load(const SharedMaps& shared, const std::string& detail = {}) {
    shared.reuse_in(skel_->obj);
    prepare_process_uprobes(skel_->obj);
    int err;
    {
      LoadWindow others_may_start;
      err = load_(skel_.get());
    }
    if (err)
      throw Error(errno_text(owner_ + ": load BPF object" + detail, -err), "run with -vv to see the verifier log");
  }

  S* operator->() const { return skel_.get(); }
  S* get() const { return skel_.get(); }
  explicit operator bool() const { return skel_ != nullptr; }
  void reset() { skel_.reset(); }

 private:
  std::string owner_;
  std::unique_ptr<S, void (*)(S*)> skel_{nullptr, nullptr};
  int (*load_)(S*) = nullptr;
};

}  // namespace pyebpf::bpf
