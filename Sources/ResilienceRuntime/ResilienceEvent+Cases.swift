public import ResilienceCore

extension ResilienceEvent {
    /// A decision's trigger, epoch and actions; nil for other events.
    public var decision: (trigger: Trigger, epoch: NetworkEpoch, actions: [PlannedAction])? {
        if case .decision(let trigger, let epoch, let actions, _) = self { return (trigger, epoch, actions) }
        return nil
    }

    /// The action event; nil for other events.
    public var action: ActionEvent? {
        if case .action(let event) = self { return event }
        return nil
    }

    /// The path transition; nil for other events.
    public var transition: PathTransition? {
        if case .transition(let transition) = self { return transition }
        return nil
    }

    /// What flap damping held or released; nil for other events.
    public var damping: DampingEvent? {
        if case .damping(let event) = self { return event }
        return nil
    }

    /// What the suspended app held or released; nil for other events.
    public var suspensionHold: SuspensionHoldEvent? {
        if case .suspensionHold(let event) = self { return event }
        return nil
    }

    /// Whether a lost and a restored were dropped as a pair (``flapCoalesced(lost:restored:)``).
    public var isFlapCoalesced: Bool {
        if case .flapCoalesced = self { return true }
        return false
    }
}
