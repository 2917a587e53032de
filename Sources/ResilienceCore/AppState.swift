/// The host app's lifecycle state, as the platform reports it.
public enum AppState: String, Hashable, Sendable, Codable, CaseIterable {
    case foreground
    case background
    /// Nothing runs until `resumed`; timers may not fire.
    case suspended
}

/// What the host app reports about its lifecycle.
public enum AppEvent: String, Hashable, Sendable, Codable, CaseIterable {
    case enteredBackground
    case enteredForeground
    case suspending
    /// After a suspension (or a system sleep detected by CLOCK_BOOTTIME running ahead of
    /// CLOCK_MONOTONIC): refresh what expired and resync the network.
    case resumed
    /// The system took the media path (e.g. an incoming cellular call): active calls go on hold.
    case interrupted
    /// The interruption is over: resume only the calls the interruption held.
    case interruptionEnded

    /// The app state after this event, given the state before it.
    public func nextState(from state: AppState) -> AppState {
        switch self {
        case .enteredBackground: .background
        case .enteredForeground: .foreground
        case .suspending: .suspended
        case .resumed: state == .suspended ? .background : state
        case .interrupted, .interruptionEnded: state
        }
    }
}
