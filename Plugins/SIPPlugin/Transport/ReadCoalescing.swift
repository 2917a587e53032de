internal import NIOCore

/// Who awaits answers on one shared UDP socket, and so how soon its next read must happen.
///
/// A pure value (``SharedDatagramSocket`` keeps it under its lock). Invariants: the counts never
/// go below zero; reads may be held back only while some exchange awaits an answer and every
/// one of them may wait (a refresh the wake-up scheduler started well before expiry): anything
/// else on the socket (a recovery, a call, nothing at all) is read at once.
struct AnswerWaits: Hashable, Sendable {
    private(set) var patient = 0
    private(set) var urgent = 0

    /// Whether a read may be held back now.
    var mayHoldReads: Bool { patient > 0 && urgent == 0 }

    mutating func begin(patient isPatient: Bool) {
        if isPatient { patient += 1 } else { urgent += 1 }
    }

    mutating func end(patient isPatient: Bool) {
        if isPatient { patient = max(patient - 1, 0) } else { urgent = max(urgent - 1, 0) }
    }
}

/// Whether the exchanges of the current task may have their answers read late (a task-local
/// set by ``SIPPlugin`` around an action of the wake-up scheduler's `refresh.due`).
enum AnswerPatience {
    @TaskLocal static var mayWait = false
}

/// Holds a shared UDP socket's next read back by `delay` while `mayHold` says so, so the answers
/// to a batch of refreshes pile up in the socket's receive buffer and are read in one pass (one
/// wake-up) instead of one wake-up each as they trickle in.
///
/// Invariants: at most one read is held at a time (NIO asks again only after a read pass); a held
/// read is let go after `delay` at the latest, or at once by `release()` (an urgent exchange
/// began); with `mayHold` false every read goes through at once, as without this handler. The
/// delay stays far under T1 (500 ms), so no answer is retransmitted for it, and the pacing window
/// bounds how many answers can pile up (the socket's buffer holds far more).
final class ReadCoalescing: ChannelOutboundHandler {
    typealias OutboundIn = Any

    let delay: TimeAmount
    let mayHold: @Sendable () -> Bool
    private var held: Scheduled<Void>?
    private var context: ChannelHandlerContext?

    init(delay: TimeAmount, mayHold: @escaping @Sendable () -> Bool) {
        self.delay = delay
        self.mayHold = mayHold
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        held?.cancel()
        held = nil
        self.context = nil
    }

    func read(context: ChannelHandlerContext) {
        guard held == nil else { return }
        guard mayHold() else { return context.read() }
        held = context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in
            held = nil
            context.read()
        }
    }

    /// Lets a held read go now; nothing when none is held. On the channel's event loop.
    func release() {
        guard let held, let context else { return }
        held.cancel()
        self.held = nil
        context.read()
    }
}
