package wire

// The conditions of a SubmitChangeRequest (its Condition field, version
// 1; docs/wire.md), from the weakest.
const (
	ConditionNone              int8 = 0
	ConditionNoUncommittedTail int8 = 1
	ConditionUnchangedSince    int8 = 2
)

// StricterCondition returns the stricter of two conditions, each a
// Condition value and its UnchangedSince offset: an unchanged-since check
// with the lower offset, else the higher Condition value. A submission
// given several conditions is held to this one.
func StricterCondition(kind int8, since int64, other int8, otherSince int64) (int8, int64) {
	switch {
	case other == ConditionUnchangedSince && (kind != ConditionUnchangedSince || otherSince < since):
		return other, otherSince
	case other > kind:
		return other, since
	}
	return kind, since
}
