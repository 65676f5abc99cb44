#include "proxy/output_capture.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string_view>
#include <thread>
#include <utility>

#include "log.hpp"
#include "proxy/client_link.hpp"
#include "write_all.hpp"

namespace hivecl::proxy {

namespace {

// Room in the pipe for a burst of output while the pump forwards the last one.
constexpr int pipe_bytes = 1 << 20;
constexpr size_t read_bytes = 64 << 10;  // the most text in one frame

}  // namespace

bool may_print(std::span<const std::byte> program) {
  // string_view's find looks for the first letter with memchr: a byte-by-byte search cost as
  // much as the native clCreateProgramWithSource itself (callgrind, SHOC's 3 KB source).
  const std::string_view text(reinterpret_cast<const char*>(program.data()), program.size());
  return text.find("printf") != std::string_view::npos;
}

OutputCapture& OutputCapture::get() {
  static auto* instance = new OutputCapture;  // never destroyed: its pump outlives static destruction
  return *instance;
}

bool OutputCapture::capture() {
  std::lock_guard lock(mutex_);
  if (pipe_ >= 0) return true;
  int ends[2] = {-1, -1};
  int original = -1;
  std::fflush(stdout);
  if (pipe2(ends, O_CLOEXEC) != 0 || (original = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3)) < 0 ||
      fcntl(ends[0], F_SETFL, O_NONBLOCK) != 0 || dup2(ends[1], STDOUT_FILENO) < 0) {
    const int error = errno;
    for (const int fd : {ends[0], ends[1], original})
      if (fd >= 0) close(fd);
    log::warn("kernels' output stays in the proxy's own: its standard output could not be taken (errno ", error,
              ")");
    return false;
  }
  close(ends[1]);
  fcntl(STDOUT_FILENO, F_SETPIPE_SZ, pipe_bytes);    // best effort
  std::setvbuf(stdout, nullptr, _IOLBF, 0);          // a line printed goes into the pipe at once
  original_stdout_ = original;
  buffer_.resize(read_bytes);
  pipe_ = ends[0];
  std::thread([this] { pump(); }).detach();
  return true;
}

void OutputCapture::join(const std::shared_ptr<ClientLink>& link) {
  if (pipe_ < 0) return;
  std::lock_guard lock(mutex_);
  clients_[link.get()] = Client{.link = link};
}

// What was printed while the client could have been its author goes by that (read_available first).
void OutputCapture::leave(const ClientLink* link) {
  if (pipe_ < 0) return;
  std::lock_guard lock(mutex_);
  read_available();
  clients_.erase(link);
  if (unfinished_author_ == link) unfinished_author_ = nullptr;  // its line's end goes to the log
}

void OutputCapture::note_program(const ClientLink* link, bool may_print) {
  if (pipe_ < 0) return;
  std::lock_guard lock(mutex_);
  const auto found = clients_.find(link);
  if (found == clients_.end()) return;
  read_available();
  found->second.programs = true;
  found->second.printing = found->second.printing || may_print;
}

void OutputCapture::drain(const ClientLink* exiting) {
  if (pipe_ < 0) return;
  // Not under mutex_: a runtime thread printing into a full pipe holds stdout's lock until the
  // pump, which needs mutex_, has made room.
  std::fflush(stdout);
  std::lock_guard lock(mutex_);
  read_available();
  if (unfinished_.empty() || !exiting || unfinished_author_ != exiting) return;
  bool several = false;
  send_unfinished_line(author(several));
}

void OutputCapture::pump() {
  pollfd watched{pipe_, POLLIN, 0};
  while (true) {
    if (poll(&watched, 1, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    std::lock_guard lock(mutex_);
    read_available();
    if ((watched.revents & (POLLHUP | POLLERR | POLLNVAL)) && !(watched.revents & POLLIN)) return;
  }
}

void OutputCapture::read_available() {
  while (true) {
    const ssize_t got = read(pipe_, buffer_.data(), buffer_.size());
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return;  // nothing more for now, or no writer left
    forward(std::span(buffer_).first(static_cast<size_t>(got)));
  }
}

// One client's text is not another's to see: where several clients may have printed it, it goes
// to the proxy's own output (its log) instead. Whole lines go; the start of a line waits for its end.
void OutputCapture::forward(std::span<const std::byte> text) {
  bool several = false;
  const std::shared_ptr<ClientLink> link = author(several);
  if (several && !warned_several_) {
    log::warn("kernels of several clients may be printing: what they print goes to this log");
    warned_several_ = true;
  }
  if (link) warned_several_ = false;
  // Up to the last line's end.
  const auto whole = static_cast<size_t>(std::find(text.rbegin(), text.rend(), std::byte{'\n'}).base() - text.begin());
  if (unfinished_.empty()) unfinished_author_ = link.get();
  if (whole > 0) {
    const auto first_end = static_cast<size_t>(std::find(text.begin(), text.end(), std::byte{'\n'}) - text.begin()) + 1;
    unfinished_.insert(unfinished_.end(), text.begin(), text.begin() + static_cast<std::ptrdiff_t>(first_end));
    send_unfinished_line(link);
    send(link, text.subspan(first_end, whole - first_end));
    unfinished_author_ = link.get();
  }
  unfinished_.insert(unfinished_.end(), text.begin() + static_cast<std::ptrdiff_t>(whole), text.end());
  // A line longer than a frame's text goes in pieces after all.
  if (unfinished_.size() >= read_bytes) send_unfinished_line(link);
}

void OutputCapture::send_unfinished_line(const std::shared_ptr<ClientLink>& author) {
  send(unfinished_author_ == author.get() ? author : nullptr, unfinished_);
  unfinished_.clear();
}

void OutputCapture::send(const std::shared_ptr<ClientLink>& link, std::span<const std::byte> text) {
  if (text.empty()) return;
  if (link) return link->send_output(text);
  write_all(original_stdout_, text);
}

std::shared_ptr<ClientLink> OutputCapture::author(bool& several) const {
  std::shared_ptr<ClientLink> printing, other;
  size_t printing_count = 0, other_count = 0;
  for (const auto& [key, client] : clients_) {
    std::shared_ptr<ClientLink> link = client.programs ? client.link.lock() : nullptr;
    if (!link) continue;
    if (client.printing) {
      printing = std::move(link);
      ++printing_count;
    } else {
      other = std::move(link);
      ++other_count;
    }
  }
  const size_t count = printing_count > 0 ? printing_count : other_count;
  several = count > 1;
  if (count != 1) return nullptr;
  return printing_count > 0 ? printing : other;
}

}  // namespace hivecl::proxy
