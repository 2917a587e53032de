internal import Synchronization

/// The binding queries (see ``BindingCheck``) of every account bound at the same registrar,
/// taken in turns: a registrar forgets all its bindings at once (a restart without a persistent
/// location table, a backup sharing none), so one account's query speaks for all of them.
///
/// Without turns, every flow ping of every account became a REGISTER once its binding went
/// unconfirmed for 3/4 of the interval: with a 2 s ping, 100 accounts sent 50 REGISTERs a second
/// through the registrar pacer. With them, a registrar gets one query per 3/4 of the asking
/// account's flow-ping interval, whatever the number of accounts; the accounts whose turn it is
/// not send their plain keep-alive.
///
/// Pure: time is passed in, the queries and the alarm are the agents'. Invariants:
/// - At most one query is granted per registrar per 3/4 of the interval given with the request
///   (pings come at 80–100 % of their interval, RFC 5626 §4.4.1, so a registrar with one
///   account still gets a query at each of its pings).
/// - Turns go round: an account that had its turn in the current round is refused until every
///   account bound there (`accounts`) had one, so the runtime's batched pings (always in the same
///   order) do not give every turn to the same account.
/// - A lost binding raises the registrar's alarm (every other account bound there renews) at
///   most once per 3/4 of the interval, so the renewals cannot set off one another.
/// - At most ``maximumRegistrars`` registrars are remembered, and a round holds at most
///   `accounts` accounts; past that the memory starts over (a query more, never one fewer
///   account checked).
struct BindingQueryTurns: Sendable, Hashable {
    /// Registrars remembered at most (the addresses of one plugin's accounts).
    static let maximumRegistrars = 4096

    private struct Round: Sendable, Hashable {
        var lastQuery: ContinuousClock.Instant
        var queried: Set<ObjectIdentifier> = []
    }
    private var rounds: [String: Round] = [:]
    private var lastAlarm: [String: ContinuousClock.Instant] = [:]

    /// Whether `account`, one of `accounts` bound at `registrar`, may send a query with its ping
    /// due at `now`: true (and the turn taken) when no query went there within 3/4 of `interval`
    /// and the account has not had its turn in this round.
    mutating func takeTurn(
        at registrar: String, by account: ObjectIdentifier, of accounts: Int, now: ContinuousClock.Instant,
        interval: Duration
    ) -> Bool {
        if var round = rounds[registrar] {
            guard now - round.lastQuery >= interval * 3 / 4 else { return false }
            if round.queried.count >= max(accounts, 1) { round.queried.removeAll() }
            guard !round.queried.contains(account) else { return false }
            round.queried.insert(account)
            round.lastQuery = now
            rounds[registrar] = round
            return true
        }
        if rounds.count >= Self.maximumRegistrars { rounds.removeAll() }
        rounds[registrar] = Round(lastQuery: now, queried: [account])
        return true
    }

    /// Whether a lost binding at `registrar` found at `now` alarms the other accounts there: true
    /// (and the alarm raised) when none was raised within 3/4 of `interval`.
    mutating func raiseAlarm(at registrar: String, now: ContinuousClock.Instant, interval: Duration) -> Bool {
        if let previous = lastAlarm[registrar], now - previous < interval * 3 / 4 { return false }
        if lastAlarm[registrar] == nil, lastAlarm.count >= Self.maximumRegistrars { lastAlarm.removeAll() }
        lastAlarm[registrar] = now
        return true
    }
}

/// What the accounts of one plugin share about their registrars' memory: the query turns
/// (``BindingQueryTurns``) and who is bound where, so that a lost binding found by one account
/// makes every other account bound at the same registrar renew at once, within the same flow-ping
/// interval, instead of each waiting for its own turn.
///
/// Invariant: one entry per listening account (its latest registrar), removed when it
/// unregisters or its agent closes; the alarm runs the other accounts' callbacks outside the lock.
final class BindingWatch: Sendable {
    private struct Listener {
        var registrar: String
        var renew: @Sendable () -> Void
    }
    private struct State {
        var turns = BindingQueryTurns()
        var listeners: [ObjectIdentifier: Listener] = [:]
    }
    private let state = Mutex(State())

    /// `account` is bound at `registrar`: a lost binding another account finds there calls `renew`.
    func listen(_ account: ObjectIdentifier, at registrar: String, renew: @escaping @Sendable () -> Void) {
        state.withLock { $0.listeners[account] = Listener(registrar: registrar, renew: renew) }
    }

    /// `account` is bound nowhere any more (unregistered).
    func leave(_ account: ObjectIdentifier) {
        _ = state.withLock { $0.listeners.removeValue(forKey: account) }
    }

    /// See ``BindingQueryTurns/takeTurn(at:by:of:now:interval:)``; the round counts the accounts
    /// listening at `registrar`.
    func takeTurn(
        at registrar: String, by account: ObjectIdentifier, now: ContinuousClock.Instant, interval: Duration
    ) -> Bool {
        state.withLock { state in
            let accounts = state.listeners.values.count { $0.registrar == registrar }
            return state.turns.takeTurn(at: registrar, by: account, of: accounts, now: now, interval: interval)
        }
    }

    /// `account` found its binding lost at `registrar`: every other account bound there renews,
    /// unless the alarm was raised within 3/4 of `interval`. The number of accounts alarmed.
    @discardableResult
    func bindingLost(
        by account: ObjectIdentifier, at registrar: String, now: ContinuousClock.Instant, interval: Duration
    )
        -> Int
    {
        let others = state.withLock { state -> [@Sendable () -> Void] in
            guard state.turns.raiseAlarm(at: registrar, now: now, interval: interval) else { return [] }
            return state.listeners.filter { $0.key != account && $0.value.registrar == registrar }.map(\.value.renew)
        }
        for renew in others { renew() }
        return others.count
    }
}
