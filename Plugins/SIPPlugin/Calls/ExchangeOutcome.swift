internal import ResilienceCore

/// How an exchange ended.
enum ExchangeOutcome: Hashable, Sendable {
    case succeeded
    case failed(ExchangeFailure)
}

/// Why an exchange failed.
enum ExchangeFailure: Hashable, Sendable {
    /// The far end's final response to our `request` (`INVITE`, `re-INVITE`, `UPDATE`).
    case refused(status: Int, request: String)
    /// No final response to our `request`.
    case noAnswer(request: String)
    /// Another offer is in progress (RFC 3261 §14.1: one at a time).
    case offerInProgress
    /// Our glared offer found the slot busy until its deadline.
    case noRetryAfterGlare
    /// The media session could not describe the offer.
    case media(String)
    /// The app or the policy gave up on it.
    case cancelled
    /// The call ended first.
    case callEnded
}

extension ExchangeFailure {
    /// How a call whose first INVITE failed this way is reported ended.
    var endOfPlacing: (trigger: String, reason: String) {
        switch self {
        case .refused(let status, _): ("remote", "\(status)")
        case .noAnswer: ("timeout", "408")
        case .media(let why): ("remote", why)
        case .cancelled: ("api", "cancelled")
        case .offerInProgress, .noRetryAfterGlare, .callEnded: ("remote", "failed")
        }
    }
}

extension ExchangeFailure {
    /// The error the exchange's waiter throws; `response` is the exchange's last final response.
    func error(response: SIPMessage?, call id: CallID) -> any Error {
        switch self {
        case .refused(let status, let request):
            return response.map { SIPUserAgent.failure($0, request) }
                ?? PluginError("\(request) of call \(id) failed: \(status)")
        case .noAnswer(let request): return PluginError("no answer to the \(request) of call \(id)")
        case .offerInProgress: return PluginError("an offer/answer is already in progress in call \(id)")
        case .noRetryAfterGlare:
            return PluginError("call \(id): no retry after glare (the call ended or its offer slot stayed busy)")
        case .media(let why): return PluginError("call \(id): \(LogText.escaped(why, limit: 120))")
        case .cancelled: return CancellationError()
        case .callEnded: return PluginError.permanent("call \(id) ended")
        }
    }
}
