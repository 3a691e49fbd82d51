# Recipients who asked a business to stop (notifications/optout.py): the suppression list,
# and messages marked SUPPRESSED instead of sent.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0006_low_balance_threshold'),
        ('notifications', '0002_purge_index'),
    ]

    operations = [
        migrations.AlterField(
            model_name='message',
            name='status',
            field=models.CharField(choices=[('PENDING', 'Pending'), ('SENDING', 'Sending'), ('SENT', 'Sent'), ('SANDBOX', 'Sandbox'), ('THROTTLED', 'Throttled'), ('FAILED', 'Failed'), ('SUPPRESSED', 'Suppressed')], default='PENDING', max_length=10),
        ),
        migrations.CreateModel(
            name='Suppression',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('channel', models.CharField(choices=[('email', 'Email'), ('sms', 'SMS')], max_length=10)),
                ('address', models.CharField(max_length=254)),
                ('source', models.CharField(choices=[('sms_stop', 'Replied STOP'), ('email_unsubscribe', 'Unsubscribed from an email')], max_length=20)),
                ('created_at', models.DateTimeField()),
                ('lifted_at', models.DateTimeField(blank=True, null=True)),
                ('lifted_note', models.CharField(blank=True, max_length=500)),
                ('lifted_by', models.CharField(blank=True, max_length=254)),
                ('from_message_id', models.BigIntegerField(blank=True, null=True)),
                ('business', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to='accounts.business')),
            ],
            options={
                'indexes': [models.Index(fields=['channel', 'address'], name='suppression_address')],
                'constraints': [
                    models.UniqueConstraint(condition=models.Q(('lifted_at__isnull', True)), fields=('business', 'channel', 'address'), name='suppression_once'),
                    models.UniqueConstraint(fields=('from_message_id',), name='suppression_link_once'),
                ],
            },
        ),
    ]
