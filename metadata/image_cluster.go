package metadata

import "iter"

// Endpoint is a listener of a broker or controller.
type Endpoint struct {
	// Name is the listener name.
	Name string
	// Host is the advertised host name.
	Host string
	// Port is the advertised port.
	Port uint16
	// SecurityProtocol is Kafka's security protocol id (0 PLAINTEXT, 1
	// SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL).
	SecurityProtocol int16
}

// SupportedFeature is a feature range a broker or controller supports.
type SupportedFeature struct {
	// Name is the feature name.
	Name string
	// Min and Max bound the supported levels.
	Min, Max int16
}

// Broker is a broker registration (Kafka's BrokerRegistration). It is
// immutable: its slices must not be modified.
type Broker struct {
	// ID is the broker id.
	ID int32
	// IncarnationID identifies the broker process that registered.
	IncarnationID [16]byte
	// Epoch is the broker epoch the controller assigned (KIP-903: the
	// offset of the registration record).
	Epoch int64
	// Endpoints are the broker's listeners, in registration order.
	Endpoints []Endpoint
	// Features are the supported feature ranges, in registration order.
	Features []SupportedFeature
	// Rack is the broker rack, nil when unset.
	Rack *string
	// Fenced reports whether the broker is fenced.
	Fenced bool
	// InControlledShutdown reports whether the broker is shutting down.
	InControlledShutdown bool
	// IsMigratingZkBroker reports a ZooKeeper broker in migration.
	IsMigratingZkBroker bool
	// LogDirs are the broker's online log directories (KIP-858).
	LogDirs [][16]byte
	// CordonedLogDirs are the cordoned log directories (KIP-1066); nil
	// until the broker reports them.
	CordonedLogDirs [][16]byte
}

// Controller is a controller registration (Kafka's
// ControllerRegistration, from RegisterControllerRecord).
type Controller struct {
	// ID is the controller (node) id.
	ID int32
	// IncarnationID identifies the controller process that registered.
	IncarnationID [16]byte
	// ZkMigrationReady reports readiness for ZooKeeper migration.
	ZkMigrationReady bool
	// Endpoints are the controller listeners, in registration order.
	Endpoints []Endpoint
	// Features are the supported feature ranges, in registration order.
	Features []SupportedFeature
}

// ClusterImage holds the registered brokers and controllers (Kafka's
// ClusterImage).
type ClusterImage struct {
	brokers     pmap[int32, *Broker]
	controllers pmap[int32, *Controller]
}

// Broker returns the registration of broker id.
func (c ClusterImage) Broker(id int32) (*Broker, bool) { return c.brokers.Get(id) }

// Brokers iterates over the registered brokers by ascending id.
func (c ClusterImage) Brokers() iter.Seq[*Broker] { return c.brokers.Values() }

// NumBrokers returns the number of registered brokers.
func (c ClusterImage) NumBrokers() int { return c.brokers.Len() }

// Controller returns the registration of controller id.
func (c ClusterImage) Controller(id int32) (*Controller, bool) { return c.controllers.Get(id) }

// Controllers iterates over the registered controllers by ascending id.
func (c ClusterImage) Controllers() iter.Seq[*Controller] { return c.controllers.Values() }

// NumControllers returns the number of registered controllers.
func (c ClusterImage) NumControllers() int { return c.controllers.Len() }
