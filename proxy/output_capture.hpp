// What kernels print (printf). A native runtime writes it to its process's standard output, which
// in hivecl-proxy is not the application's: the proxy takes its standard output into a pipe
// (capture) and sends what comes through it to the client whose kernels may have printed it
// (FrameKind::output), which writes it to its own standard output. Before a frame goes to a
// client that may print, what its kernels have printed so far goes first (drain), so that the
// text is there when the application learns that the kernel ended, as natively. Text goes by
// whole lines: a runtime may write a line in pieces, and one whose pieces came while the text's
// author changed is no single client's.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

namespace hivecl::proxy {

class ClientLink;

// Whether program text (source or binary) may print: it names printf.
bool may_print(std::span<const std::byte> program);

class OutputCapture {
 public:
  static OutputCapture& get();
  // hivecl-proxy, before any session: standard output goes into a pipe from now on. False if
  // it could not (output then stays where it was).
  bool capture();
  // A client's link, from its session's start to its end, and the programs it makes. The output
  // goes to the client that made a program that may print; with none, to the client that made
  // programs (a printf from a header the proxy did not see; a proxy's peers make none); where
  // more than one may have printed it, to the proxy's own output.
  void join(const std::shared_ptr<ClientLink>& link);
  void leave(const ClientLink* link);
  void note_program(const ClientLink* link, bool may_print);
  // Sends what has been printed until now to whom it goes (any thread; nothing unless captured),
  // but a line not ended yet, unless it is that of `exiting`, a client about to go.
  void drain(const ClientLink* exiting = nullptr);

 private:
  struct Client {
    std::weak_ptr<ClientLink> link;
    bool programs = false;
    bool printing = false;
  };
  void read_available();
  void forward(std::span<const std::byte> text);
  void send(const std::shared_ptr<ClientLink>& link, std::span<const std::byte> text);
  // Sends the line not ended yet where it goes if it ends now: to its author, if still the author.
  void send_unfinished_line(const std::shared_ptr<ClientLink>& author);
  // The one client that may have printed; null, and `several` true, when there are more.
  std::shared_ptr<ClientLink> author(bool& several) const;
  void pump();

  std::mutex mutex_;  // reading the pipe, clients_, buffer_, unfinished_
  std::unordered_map<const ClientLink*, Client> clients_;
  std::vector<std::byte> buffer_;
  std::vector<std::byte> unfinished_;            // the start of a line whose end has not come
  const ClientLink* unfinished_author_ = nullptr;  // its author when it began; null: none, or several
  std::atomic<int> pipe_{-1};  // the reading end, set once
  int original_stdout_ = -1;    // where output no client takes goes
  bool warned_several_ = false;
};

}  // namespace hivecl::proxy
